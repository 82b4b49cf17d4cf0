"""Set-kernel Gram matrices over bags."""

import numpy as np

from . import _native
from ._bags import native_bags

__all__ = ["gram_matrix"]


def gram_matrix(
    bags,
    kernel="kand",
    epsilon=0.1,
    delta=0.01,
    seed=1,
    gamma=None,
    estimator="fast",
    precision=None,
    log=False,
):
    """The Gram matrix of a set kernel over all bags, as ``mil gram`` computes it.

    Parameters
    ----------
    bags : sequence of ndarray
        One (instances x features) array per bag.
    kernel : {"kand", "kandor", "kmin", "nsk"}, default="kand"
        A box-counting kernel (estimated on a grid fitted on ``bags``) or the normalised
        set kernel on z-scored features.
    epsilon, delta : float, default=0.1, 0.01
        Relative error and failure probability of the box-kernel estimates.
    seed : int, default=1
        Seed of the estimates (entry (i, j) has its own generator, so the matrix does not
        depend on the thread count).
    gamma : float or None, default=None
        NSK's gamma; None is 1 / (number of non-constant features).
    estimator : {"fast", "paper"}, default="fast"
        The box-kernel estimators.
    precision : int or None, default=None
        Power of ten of the discretisation; None picks it from the data.
    log : bool, default=False
        Return ln k instead of k. Box-kernel values reach 10^600 and more, beyond float64:
        ask for the logarithms (what the library computes) unless the values are small.

    Returns
    -------
    ndarray of shape (n_bags, n_bags)
        k(bag_i, bag_j), or its natural logarithm when ``log``; symmetric.
    """
    native, _ = native_bags(bags)
    ln = _native.log_gram(
        native,
        kernel,
        estimator,
        float(epsilon),
        float(delta),
        None if precision is None else int(precision),
        None if gamma is None else float(gamma),
        int(seed),
    )
    if log:
        return ln
    with np.errstate(over="ignore"):
        return np.exp(ln)
