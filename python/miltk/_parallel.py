"""Threads of the native layer (rayon).

Every native call that computes in parallel runs on a rayon pool built for that call,
with the estimator's ``n_jobs`` threads; :func:`set_num_threads` sets the threads of the
calls made with ``n_jobs=None``.
"""

from __future__ import annotations

from . import _native

__all__ = ["set_num_threads", "get_num_threads"]


def set_num_threads(n: int) -> None:
    """Set the threads of the native calls made with ``n_jobs=None``.

    By default those calls use one thread per core (or ``RAYON_NUM_THREADS``). Under
    joblib (``GridSearchCV(n_jobs=...)``), give each worker one thread (or cores /
    n_jobs) to avoid oversubscription, here or through each estimator's ``n_jobs``. It
    may be called at any time; the calls after it use the new count.

    Parameters
    ----------
    n : int
        Threads, from 1 to 4 per core.

    Raises
    ------
    ValueError
        When ``n`` is below 1 or above 4 threads per core.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    _native.set_num_threads(n)


def get_num_threads() -> int:
    """The threads of the native calls made with ``n_jobs=None``.

    Returns
    -------
    int
    """
    return _native.num_threads()
