"""Key-instance metrics: how well instance scores (:meth:`predict_instances` of a miltk
classifier) find the instances that make bags positive, where those are known (the
``bag_id,instance,positive`` file ``mil synth --truth`` writes). The same computations
as ``mil predict --instances --truth``."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import numpy.typing as npt

from . import _native

__all__ = ["instance_auroc", "witness_precision"]


def _lists(
    scores: Sequence[npt.ArrayLike], truth: Sequence[npt.ArrayLike]
) -> tuple[list[list[float]], list[list[bool]]]:
    s = [np.asarray(b, dtype=np.float64).ravel().tolist() for b in scores]
    t = [np.asarray(b, dtype=bool).ravel().tolist() for b in truth]
    return s, t


def instance_auroc(
    scores: Sequence[npt.ArrayLike], truth: Sequence[npt.ArrayLike]
) -> Optional[float]:
    """Area under the ROC curve of all instances' scores against their true labels.

    Parameters
    ----------
    scores : sequence of 1-D arrays
        One array of instance scores per bag (:meth:`predict_instances`).
    truth : sequence of 1-D boolean arrays
        The true instance labels, shaped like ``scores``.

    Returns
    -------
    float or None
        Ties count one half; ``None`` when every instance is of one class.
    """
    s, t = _lists(scores, truth)
    return _native.instance_auroc(s, t)


def witness_precision(
    scores: Sequence[npt.ArrayLike],
    truth: Sequence[npt.ArrayLike],
    predicted_positive: npt.ArrayLike,
) -> Optional[float]:
    """Of the bags predicted positive, the fraction whose witness — the first
    highest-scoring instance — is truly positive.

    Parameters
    ----------
    scores : sequence of 1-D arrays
        One array of instance scores per bag (:meth:`predict_instances`).
    truth : sequence of 1-D boolean arrays
        The true instance labels, shaped like ``scores``.
    predicted_positive : array-like of bool, shape (n_bags,)
        Which bags the classifier labels positive.

    Returns
    -------
    float or None
        ``None`` when no bag is predicted positive.
    """
    s, t = _lists(scores, truth)
    positive = np.asarray(predicted_positive, dtype=bool).ravel().tolist()
    return _native.witness_precision(s, t, positive)
