"""Deployment: the compact models the ``no_std`` core (``mil-core``) runs on a
microcontroller, and the core's own inference on them, so a notebook checks what the
device computes."""

import numpy as np

from . import _native
from ._bags import native_bags
from ._base import fitted

__all__ = ["export", "CoreModel"]


def _parts(estimator):
    """(projection estimator or None, classifier estimator) of a fitted model."""
    steps = getattr(estimator, "steps", None)
    if steps is None:
        return None, estimator
    models = [step for _, step in steps if step is not None and step != "passthrough"]
    if len(models) == 1:
        return None, models[0]
    if len(models) == 2:
        return models[0], models[1]
    raise ValueError(
        "export takes a classifier, or a Pipeline of one miltk projection and one miltk "
        f"classifier; this Pipeline has {len(models)} steps"
    )


def export(estimator, format="f32", fold_projection=False, input="fitted"):
    """Write a fitted model in the container ``mil_core::Model::parse`` reads.

    Parameters
    ----------
    estimator : fitted miltk classifier, Pipeline or M3IC
        A :class:`miltk.CitationKNN`, :class:`miltk.MILR` or :class:`miltk.SetKernelSVM`
        (box kernels), alone or after one miltk projection in a
        ``sklearn.pipeline.Pipeline``; or a :class:`miltk.M3IC` clustering.
    format : {"f32", "q15", "q7"}, default="f32"
        Scalar encoding. Q15 and Q7 quantise inputs with the ranges of the bags the model
        (or its projection) was fitted on.
    fold_projection : bool, default=False
        For MILR after a projection: fold the projection into the score weights (one
        C x D stage instead of D x d plus C x d).
    input : {"fitted", "integer"}, default="fitted"
        Q15/Q7 input steps: ``"integer"`` gives every feature step 1, for integer
        features a device feeds as ``int16`` (ADC counts): exact, and quantising on the
        device is a copy. Raises ``ValueError`` when a training value is not an integer
        within int16. Not for M3IC.

    Returns
    -------
    bytes
        The model.

    Raises
    ------
    ValueError
        For a model the core does not run (e.g. an NSK SVM, Citation-kNN with another
        distance than the minimal Hausdorff distance).
    """
    if isinstance(getattr(estimator, "model_", None), _native.FittedCluster):
        if fold_projection:
            raise ValueError("fold_projection applies to MILR after a projection only")
        if input != "fitted":
            raise ValueError("input='integer' is not available for M3IC exports")
        return estimator.export(format)
    projection, classifier = _parts(estimator)
    if not hasattr(classifier, "_spec"):
        raise TypeError(f"cannot export {type(classifier).__name__}: not a miltk classifier")
    fitted(classifier)
    native_projection = None
    if projection is not None:
        fitted(projection)
        native_projection = projection.model_
        if not isinstance(native_projection, _native.FittedProjection):
            raise TypeError(f"cannot export {type(projection).__name__}: not a miltk projection")
    if not isinstance(classifier.model_, _native.FittedClassifier):
        raise TypeError(f"cannot export {type(classifier).__name__}: not a miltk classifier")
    return _native.export_model(
        classifier.model_, native_projection, format, fold_projection, input
    )


class CoreModel:
    """A compact model run by the core's inference (``mil_core``), as on the device.

    Parameters
    ----------
    data : bytes
        A model written by :func:`export` (or ``mil export``); parsed and checked as
        ``mil_core::Model::parse`` does.
    classes : array-like, optional
        Labels by class index (an estimator's ``classes_``); without them ``predict``
        returns class indices.

    Examples
    --------
    >>> from miltk import MILR, load_musk1
    >>> from miltk.deploy import CoreModel, export
    >>> bags, y = load_musk1()
    >>> clf = MILR(pooling="mean", ridge=1.0).fit(bags, y)
    >>> core = CoreModel(export(clf, "q15"), classes=clf.classes_)
    >>> bool((core.predict(bags) == clf.predict(bags)).mean() > 0.95)
    True
    """

    def __init__(self, data, classes=None):
        self._model = _native.CoreModel(bytes(data))
        self.classes = None if classes is None else np.asarray(classes)

    @classmethod
    def from_estimator(cls, estimator, format="f32", fold_projection=False):
        """Export a fitted estimator and load it, with its ``classes_``.

        Parameters
        ----------
        estimator : fitted miltk classifier or Pipeline
            See :func:`export`.
        format : {"f32", "q15", "q7"}, default="f32"
            Scalar encoding.
        fold_projection : bool, default=False
            See :func:`export`.

        Returns
        -------
        CoreModel
        """
        _, classifier = _parts(estimator)
        return cls(export(estimator, format, fold_projection), classes=classifier.classes_)

    def classify(self, bags):
        """The core's class index and per-class scores of every bag.

        Parameters
        ----------
        bags : sequence of ndarray
            One (instances x features) array per bag, raw features.

        Returns
        -------
        labels : ndarray of shape (n_bags,)
            Class indices.
        scores : ndarray of shape (n_bags, n_outputs)
            The core's scores (f32 arithmetic, widened to float64).
        """
        native, _ = native_bags(bags, n_features=self.input_dim)
        labels, scores = self._model.classify(native)
        return np.asarray(labels, dtype=np.intp), scores

    def predict(self, bags):
        """The core's label of every bag.

        Parameters
        ----------
        bags : sequence of ndarray
            One (instances x features) array per bag, raw features.

        Returns
        -------
        ndarray of shape (n_bags,)
            Labels from ``classes`` when given, class indices otherwise.
        """
        labels, _ = self.classify(bags)
        return labels if self.classes is None else self.classes[labels]

    @property
    def kind(self):
        """The model kind (``linear-mil``, ``citation-knn``, ``set-kernel-svm``, ...)."""
        return self._model.kind

    @property
    def encoding(self):
        """The scalar encoding (``f32``, ``q15``, ``q7``)."""
        return self._model.encoding

    @property
    def input_dim(self):
        """Raw features per instance."""
        return self._model.input_dim

    def __len__(self):
        return self._model.n_bytes

    def __bytes__(self):
        return bytes(self._model.to_bytes())

    def __reduce__(self):
        return (CoreModel, (bytes(self), self.classes))

    def __repr__(self):
        return f"CoreModel(kind={self.kind!r}, encoding={self.encoding!r}, bytes={len(self)})"
