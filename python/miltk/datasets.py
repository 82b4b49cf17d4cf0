"""The benchmark data sets compiled into the library."""

import numpy as np

from . import _native
from ._bags import split_rows

__all__ = [
    "load_dataset",
    "load_musk1",
    "load_musk2",
    "load_elephant",
    "load_fox",
    "load_tiger",
    "load_corel3",
    "load_sival6",
    "load_corel_dogs",
]


def load_dataset(name, return_ids=False):
    """A shipped data set as a list of bags and their labels.

    Parameters
    ----------
    name : {"musk1", "musk2", "elephant", "fox", "tiger", "corel3", "sival6", "corel_dogs"}
        The data set, as ``mil info`` names it.
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags : list of ndarray
        One (instances x features) float64 array per bag, in file order.
    y : ndarray of shape (n_bags,)
        The labels as written in the file (integers where they are integers).
    ids : ndarray of str
        Bag ids, only when ``return_ids``.
    """
    x, starts, labels, names, ids = _native.load_dataset(name)
    try:
        names = np.array([int(n) for n in names])
    except ValueError:
        names = np.array(names)
    bags = split_rows(x, starts)
    y = names[np.asarray(labels, dtype=np.intp)]
    if return_ids:
        return bags, y, np.array(ids)
    return bags, y


def load_musk1(return_ids=False):
    """UCI Musk 1: 92 bags (47 positive, 45 negative), 476 instances, 166 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("musk1", return_ids)


def load_musk2(return_ids=False):
    """UCI Musk 2: 102 bags (39 positive, 63 negative), 6598 instances, 166 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("musk2", return_ids)


def load_elephant(return_ids=False):
    """Corel elephant: 200 bags (100+/100-), 1391 instances, 230 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("elephant", return_ids)


def load_fox(return_ids=False):
    """Corel fox: 200 bags (100+/100-), 1320 instances, 230 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("fox", return_ids)


def load_tiger(return_ids=False):
    """Corel tiger: 200 bags (100+/100-), 1220 instances, 230 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("tiger", return_ids)


def load_corel3(return_ids=False):
    """Positive bags of Corel elephant, fox and tiger (labels 0/1/2): 300 bags, 230 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("corel3", return_ids)


def load_sival6(return_ids=False):
    """SIVAL, 6 categories (labels 0-5): 360 bags, 11410 instances, 30 features.

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.
    """
    return load_dataset("sival6", return_ids)


def load_corel_dogs(return_ids=False):
    """Corel 2000-image regions, "dogs" (1) vs rest (0): 2000 bags (100 positive), 9 features.

    The imbalanced benchmark: without class weights a classifier predicts the majority
    class for every bag (balanced accuracy 0.5).

    Parameters
    ----------
    return_ids : bool, default=False
        Also return the bag ids.

    Returns
    -------
    bags, y[, ids]
        See :func:`load_dataset`.

    Examples
    --------
    >>> from miltk import load_corel_dogs
    >>> bags, y = load_corel_dogs()
    >>> len(bags), int(y.sum()), bags[0].shape[1]
    (2000, 100, 9)
    """
    return load_dataset("corel_dogs", return_ids)
