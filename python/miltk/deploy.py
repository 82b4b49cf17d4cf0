"""Deployment: the compact models the ``no_std`` core (``mil-core``) runs on a
microcontroller, and the core's own inference on them, so a notebook checks what the
device computes."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from . import _native
from ._bags import BagsLike, native_bags
from ._base import fitted, pipeline_parts

__all__ = ["export", "CoreModel"]


def export(
    estimator: Any, format: str = "f32", fold_projection: bool = False, input: str = "fitted"
) -> bytes:
    """Write a fitted model in the container ``mil_core::Model::parse`` reads.

    Parameters
    ----------
    estimator : fitted miltk classifier, Pipeline or M3IC
        A classifier the core runs: :class:`miltk.MILR`, :class:`miltk.CitationKNN`,
        a linear :class:`miltk.MiSVM`, :class:`miltk.MISVM`, :class:`miltk.SMIL` or
        :class:`miltk.SBMIL`, :class:`miltk.MIWrapper`,
        :class:`miltk.SimpleMI` (mean summary) — each alone or after one miltk
        projection in a ``sklearn.pipeline.Pipeline`` — or, alone,
        :class:`miltk.SetKernelSVM` (box kernels or the MI kernel), :class:`miltk.MILES`,
        :class:`miltk.EMDD`, :class:`miltk.MiVLAD`, :class:`miltk.MiFV` or
        :class:`miltk.AttentionMIL`; or a
        :class:`miltk.M3IC` clustering.
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
        distance than the minimal Hausdorff distance, an RBF mi-SVM or sMIL, DD's
        noisy-OR),
        naming the setting that exports where there is one.
    """
    clustering = getattr(estimator, "model_", None)
    if isinstance(clustering, _native.FittedCluster):
        if fold_projection:
            raise ValueError("fold_projection applies to MILR after a projection only")
        if input != "fitted":
            raise ValueError("input='integer' is not available for M3IC exports")
        return clustering.export(format)
    projection, classifier = pipeline_parts(estimator, "export's estimator")
    if not hasattr(classifier, "_native_spec"):
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
    >>> bags, y = load_musk1(return_X_y=True)
    >>> clf = MILR(pooling="mean", ridge=1.0).fit(bags, y)
    >>> core = CoreModel(export(clf, "q15"), classes=clf.classes_)
    >>> bool((core.predict(bags) == clf.predict(bags)).mean() > 0.95)
    True
    """

    def __init__(self, data: bytes, classes: Optional[npt.ArrayLike] = None) -> None:
        self._model = _native.CoreModel(bytes(data))
        self.classes = None if classes is None else np.asarray(classes)

    @classmethod
    def from_estimator(
        cls, estimator: Any, format: str = "f32", fold_projection: bool = False
    ) -> CoreModel:
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
        _, classifier = pipeline_parts(estimator, "export's estimator")
        return cls(export(estimator, format, fold_projection), classes=classifier.classes_)

    def classify(self, bags: BagsLike) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
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

    def predict(self, bags: BagsLike) -> npt.NDArray[Any]:
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
    def kind(self) -> str:
        """The model kind (``linear-mil``, ``citation-knn``, ``set-kernel-svm``, ...)."""
        return self._model.kind

    @property
    def encoding(self) -> str:
        """The scalar encoding (``f32``, ``q15``, ``q7``)."""
        return self._model.encoding

    @property
    def input_dim(self) -> int:
        """Raw features per instance."""
        return self._model.input_dim

    def __len__(self) -> int:
        return self._model.n_bytes

    def __bytes__(self) -> bytes:
        return bytes(self._model.to_bytes())

    def __reduce__(self) -> tuple[type[CoreModel], tuple[bytes, Optional[npt.NDArray[Any]]]]:
        return (CoreModel, (bytes(self), self.classes))

    def __repr__(self) -> str:
        return f"CoreModel(kind={self.kind!r}, encoding={self.encoding!r}, bytes={len(self)})"
