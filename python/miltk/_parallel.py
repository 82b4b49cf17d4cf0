"""Control of the native thread pool (rayon)."""

from . import _native

__all__ = ["set_num_threads", "get_num_threads"]


def set_num_threads(n):
    """Size rayon's global thread pool, once, before any other miltk work.

    The library parallelises distances, Gram matrices and restarts with rayon, whose pool
    has one thread per core unless ``RAYON_NUM_THREADS`` says otherwise when it is first
    used. Under joblib (``GridSearchCV(n_jobs=...)``), give each worker one thread (or
    cores / n_jobs) to avoid oversubscription.

    Parameters
    ----------
    n : int
        Threads (at least 1).

    Raises
    ------
    RuntimeError
        When the pool already exists (any earlier miltk call that ran in parallel builds
        it); set ``RAYON_NUM_THREADS`` in the environment instead.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    _native.set_num_threads(n)


def get_num_threads():
    """The number of threads of rayon's global pool (building it if needed).

    Returns
    -------
    int
    """
    return _native.num_threads()
