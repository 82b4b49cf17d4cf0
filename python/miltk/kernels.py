"""Set-kernel Gram matrices over bags."""

from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from . import _native
from ._bags import BagsLike, native_bags
from ._base import DEPRECATED, RandomState, n_threads, renamed, seed_from_random_state

__all__ = ["gram_matrix"]


def gram_matrix(
    bags: BagsLike,
    kernel: str = "kand",
    epsilon: float = 0.1,
    delta: float = 0.01,
    random_state: RandomState = 1,
    gamma: Optional[float] = None,
    estimator: str = "fast",
    precision: Optional[int] = None,
    log: bool = False,
    n_jobs: Optional[int] = None,
    *,
    seed: object = DEPRECATED,
) -> npt.NDArray[np.float64]:
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
    random_state : int, RandomState, Generator or None, default=1
        Seed of the estimates (entry (i, j) has its own generator, so the matrix does not
        depend on the thread count): an int (the ``--seed`` of ``mil gram``) gives the
        same matrix on every call; None draws a seed from ``numpy.random``; a
        ``RandomState``/``Generator`` gives one draw of its own.
    gamma : float or None, default=None
        NSK's gamma; None is 1 / (number of non-constant features).
    estimator : {"fast", "paper"}, default="fast"
        The box-kernel estimators.
    precision : int or None, default=None
        Power of ten of the discretisation; None picks it from the data.
    log : bool, default=False
        Return ln k instead of k. Box-kernel values reach 10^600 and more, beyond float64:
        ask for the logarithms (what the library computes) unless the values are small.
    n_jobs : int or None, default=None
        Threads: None uses :func:`miltk.set_num_threads`'s count (all cores unless set),
        -1 all cores, k > 0 k threads.
    seed : int
        Deprecated name of ``random_state`` (``FutureWarning``).

    Returns
    -------
    ndarray of shape (n_bags, n_bags)
        k(bag_i, bag_j), or its natural logarithm when ``log``; symmetric.
    """
    random_state = renamed("seed", seed, "random_state", random_state, 1)
    native, _ = native_bags(bags)
    ln = _native.log_gram(
        native,
        kernel,
        estimator,
        float(epsilon),
        float(delta),
        None if precision is None else int(precision),
        None if gamma is None else float(gamma),
        seed_from_random_state(random_state),
        n_threads(n_jobs),
    )
    if log:
        return ln
    with np.errstate(over="ignore"):
        return np.exp(ln)
