"""Threads and memory of the native layer.

Every native call that computes in parallel runs on a rayon pool built for that call,
with the estimator's ``n_jobs`` threads; :func:`set_num_threads` sets the threads of the
calls made with ``n_jobs=None``. Calls whose work grows faster than the data (bag
distances, Gram matrices, scatter matrices) estimate their memory first and raise
``MemoryError`` above :func:`set_max_memory_gib`'s limit.
"""

from __future__ import annotations

from . import _native

__all__ = ["set_num_threads", "get_num_threads", "set_max_memory_gib", "get_max_memory_gib"]


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


def set_max_memory_gib(gib: float | None = None) -> None:
    """Set the memory the native calls may plan to use, in GiB.

    Before any work, ``CitationKNN``, ``SetKernelSVM``, ``BAMIC``, ``M3IC`` and the
    projections' ``fit``, :func:`gram_matrix` and :func:`cross_validate_native` estimate
    the memory of what grows beyond the data (bag distances, Gram matrices, scatter
    matrices: the estimates of ``mil --max-memory-gib``) and raise ``MemoryError``,
    naming the estimate and what to change, when it exceeds this limit. The interpreter
    keeps its state: nothing was allocated.

    Parameters
    ----------
    gib : float or None, default=None
        The limit; None is the default, half the machine's memory.

    Raises
    ------
    ValueError
        When ``gib`` is not a positive, finite number.
    """
    if gib is not None and (isinstance(gib, bool) or not isinstance(gib, (int, float))):
        raise ValueError(f"gib must be a positive number or None, got {gib!r}")
    _native.set_max_memory_gib(None if gib is None else float(gib))


def get_max_memory_gib() -> float:
    """The memory limit of the native calls, in GiB.

    Returns
    -------
    float
    """
    return _native.get_max_memory_gib()
