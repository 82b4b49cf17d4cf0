"""The benchmark data sets compiled into the library, and data files (CSV, ARFF, a
directory of ``.npy`` bags), as scikit-learn's loaders return them: a
``sklearn.utils.Bunch``, or ``(bags, y)`` with ``return_X_y=True``."""

from __future__ import annotations

import os
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt
from sklearn.utils import Bunch

from . import _native
from ._bags import Bag, split_rows

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

#: (bags, y) of ``return_X_y=True``, and (bags, y, bag_ids) of ``return_ids=True``.
XY = tuple[list[Bag], npt.NDArray[Any]]
XYIds = tuple[list[Bag], npt.NDArray[Any], npt.NDArray[np.str_]]

#: One line on each shipped data set, the first line of its ``DESCR``.
_TITLES = {
    "musk1": 'UCI Musk 1: 92 bags (47 positive, 45 negative), 476 instances, 166 features.',
    "musk2": 'UCI Musk 2: 102 bags (39 positive, 63 negative), 6598 instances, 166 features.',
    "elephant": 'Corel elephant: 200 bags (100+/100-), 1391 instances, 230 features.',
    "fox": 'Corel fox: 200 bags (100+/100-), 1320 instances, 230 features.',
    "tiger": 'Corel tiger: 200 bags (100+/100-), 1220 instances, 230 features.',
    "corel3": 'Positive bags of Corel elephant, fox and tiger (labels 0/1/2): 300 bags, 230 features.',
    "sival6": 'SIVAL, 6 categories (labels 0-5): 360 bags, 11410 instances, 30 features.',
    "corel_dogs": 'Corel 2000-image regions, "dogs" (1) vs rest (0): 2000 bags (100 positive), 9 features.',
}


def _describe(
    name: str, bags: list[Bag], y: npt.NDArray[Any], target_names: npt.NDArray[Any]
) -> str:
    """``DESCR``: the set's title and what the loaded data holds, counted from it."""
    counts = ", ".join(f"{int((y == c).sum())} labelled {c!r}" for c in target_names)
    n_instances = sum(len(b) for b in bags)
    where = (
        "as compiled into the library; the files carry no feature names"
        if name in _TITLES
        else "as read from that path"
    )
    return (
        f"{_TITLES.get(name, name)}\n\n"
        f"{len(bags)} bags ({counts}), {n_instances} instances, {bags[0].shape[1]} "
        f"features per instance. The set `mil info {name}` describes, {where}."
    )


@overload
def load_dataset(name: str | os.PathLike[str], *, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_dataset(name: str | os.PathLike[str], *, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_dataset(name: str | os.PathLike[str], *, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_dataset(name: str | os.PathLike[str], *, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_dataset(
    name: str | os.PathLike[str], *, return_X_y: bool = False, return_ids: bool = False
) -> Any:
    """A shipped data set, or a data set read from a file or directory.

    Parameters
    ----------
    name : {"musk1", "musk2", "elephant", "fox", "tiger", "corel3", "sival6", "corel_dogs"} or path
        The data set, as ``mil info`` names it: a shipped name, or the path (``str`` or
        ``os.PathLike``) of a ``.csv`` or ``.arff`` file or of a directory of ``.npy``
        bags with its ``labels.csv`` (the guide's data formats page; a file of a shipped
        set's name wins, as for ``mil``). Unlabelled sets (labels ``?``) are refused.
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data`` (also ``bags``): one (instances x features) float64 array per bag, in
        file order; ``target``: the labels as written in the file (integers where they
        are integers); ``target_names``: the distinct labels, sorted; ``bag_ids``: the
        bag ids; ``DESCR``: a description.
    (bags, y) : tuple
        With ``return_X_y``; ``(bags, y, bag_ids)`` with ``return_ids``.

    Examples
    --------
    >>> from miltk import load_dataset
    >>> musk1 = load_dataset("musk1")
    >>> len(musk1.bags), musk1.target_names.tolist()
    (92, [0, 1])
    """
    name = os.fspath(name)
    x, starts, labels, class_names, ids = _native.load_dataset(name)
    names: npt.NDArray[Any]
    try:
        names = np.array([int(n) for n in class_names])
    except ValueError:
        names = np.array(class_names)
    bags = split_rows(x, starts)
    y = names[np.asarray(labels, dtype=np.intp)]
    if return_ids:
        return bags, y, np.array(ids)
    if return_X_y:
        return bags, y
    return Bunch(
        data=bags,
        bags=bags,
        target=y,
        target_names=names,
        bag_ids=np.array(ids),
        DESCR=_describe(name, bags, y, names),
    )


@overload
def load_musk1(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_musk1(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_musk1(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_musk1(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_musk1(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """UCI Musk 1: 92 bags (47 positive, 45 negative), 476 instances, 166 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("musk1", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_musk2(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_musk2(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_musk2(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_musk2(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_musk2(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """UCI Musk 2: 102 bags (39 positive, 63 negative), 6598 instances, 166 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("musk2", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_elephant(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_elephant(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_elephant(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_elephant(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_elephant(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """Corel elephant: 200 bags (100+/100-), 1391 instances, 230 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("elephant", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_fox(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_fox(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_fox(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_fox(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_fox(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """Corel fox: 200 bags (100+/100-), 1320 instances, 230 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("fox", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_tiger(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_tiger(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_tiger(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_tiger(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_tiger(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """Corel tiger: 200 bags (100+/100-), 1220 instances, 230 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("tiger", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_corel3(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_corel3(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_corel3(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_corel3(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_corel3(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """Positive bags of Corel elephant, fox and tiger (labels 0/1/2): 300 bags, 230 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("corel3", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_sival6(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_sival6(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_sival6(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_sival6(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_sival6(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """SIVAL, 6 categories (labels 0-5): 360 bags, 11410 instances, 30 features.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.
    """
    return load_dataset("sival6", return_X_y=return_X_y, return_ids=return_ids)


@overload
def load_corel_dogs(*, return_X_y: Literal[False] = ..., return_ids: Literal[False] = ...) -> Any: ...
@overload
def load_corel_dogs(*, return_X_y: Literal[True], return_ids: Literal[False] = ...) -> XY: ...
@overload
def load_corel_dogs(*, return_X_y: bool = ..., return_ids: Literal[True]) -> XYIds: ...
@overload
def load_corel_dogs(*, return_X_y: bool = ..., return_ids: bool = ...) -> Any: ...
def load_corel_dogs(*, return_X_y: bool = False, return_ids: bool = False) -> Any:
    """Corel 2000-image regions, "dogs" (1) vs rest (0): 2000 bags (100 positive), 9 features.

    The imbalanced benchmark: without class weights a classifier predicts the majority
    class for every bag (balanced accuracy 0.5).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(bags, y)`` instead of a ``Bunch``.
    return_ids : bool, default=False
        Return ``(bags, y, bag_ids)`` instead of a ``Bunch``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        See :func:`load_dataset`.

    Examples
    --------
    >>> from miltk import load_corel_dogs
    >>> bags, y = load_corel_dogs(return_X_y=True)
    >>> len(bags), int(y.sum()), bags[0].shape[1]
    (2000, 100, 9)
    """
    return load_dataset("corel_dogs", return_X_y=return_X_y, return_ids=return_ids)
