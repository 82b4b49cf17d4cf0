"""Bags in: validation of the user's bags and labels, and their conversion to the
native layer's form (one row-major instance matrix plus bag offsets)."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _native

__all__ = ["ProjectedBags", "bags_from_instances", "check_bags"]

#: One bag as the estimators return it: instances x features, float64.
Bag = npt.NDArray[np.float64]
#: Bags as the estimators take them: a sequence of 2-D arrays (or of anything
#: ``numpy.asarray`` makes one of), or a 3-D array of equally sized bags.
BagsLike = Union[Sequence[npt.ArrayLike], npt.NDArray[Any]]


class ProjectedBags(list[Bag]):
    """A list of bags produced by a fitted projection's ``transform``.

    It behaves exactly like a ``list`` of 2-D arrays; the type itself is the marker
    that the instances were projected. :class:`miltk.CitationKNN` with
    ``scaling="auto"`` fitted on a ``ProjectedBags`` uses no scaling (rescaling the
    projected dimensions would discard the projection's weighting), as the library's
    own pipelines do; fitted on plain bags it z-scores the features.

    Parameters
    ----------
    bags : iterable of ndarray
        The projected bags.
    projection : str, optional
        Name of the projection that produced them (informative only).
    """

    def __init__(self, bags: Iterable[Bag] = (), projection: Optional[str] = None) -> None:
        super().__init__(bags)
        self.projection = projection

    def __reduce__(self) -> tuple[type[ProjectedBags], tuple[list[Bag], Optional[str]]]:
        return (ProjectedBags, (list(self), self.projection))


def _describe(value: object) -> str:
    return type(value).__name__


def check_bags(
    bags: BagsLike, n_features: Optional[int] = None, what: str = "bags"
) -> tuple[Bag, list[int]]:
    """Validate bags and gather them into one instance matrix.

    Parameters
    ----------
    bags : sequence of array-like
        One 2-D array (instances x features) per bag; float32, float64 or integer,
        any memory layout. A 3-D array is read as equally sized bags.
    n_features : int, optional
        The number of features every bag must have (e.g. as seen in ``fit``).
    what : str
        How errors name the argument.

    Returns
    -------
    x : ndarray of shape (n_instances, n_features), float64, C-contiguous
        The instances of all bags, bag after bag.
    starts : list of int
        Bag offsets into the rows of ``x`` (length ``n_bags + 1``).

    Raises
    ------
    TypeError
        When ``bags`` is not a sequence of arrays, or a bag is not numeric.
    ValueError
        On no bags, an empty bag, a bag that is not 2-D, a wrong number of features, or a
        NaN or infinite value; the message names the bag, instance and feature index.
    """
    if isinstance(bags, (str, bytes)) or not hasattr(bags, "__len__"):
        raise TypeError(
            f"{what} must be a sequence of 2-D arrays (instances x features), "
            f"not {_describe(bags)}"
        )
    if isinstance(bags, np.ndarray) and bags.dtype != object and bags.ndim == 2:
        raise ValueError(
            f"{what} is one 2-D array: pass a list of 2-D arrays, one per bag "
            "(or use miltk.bags_from_instances(X, bag_ids) to group instance rows)"
        )
    n_bags = len(bags)
    if n_bags == 0:
        raise ValueError(f"{what} holds no bags")
    arrays: list[npt.NDArray[Any]] = [np.empty((0, 0))] * n_bags
    lengths = [0] * n_bags
    expected = n_features
    ndarray = np.ndarray
    for b in range(n_bags):
        bag = bags[b]
        if type(bag) is ndarray:
            a = bag
        else:
            try:
                a = np.asarray(bag)
            except Exception as e:  # ragged nested lists and the like
                raise TypeError(f"{what}[{b}] is not an array: {e}") from None
        if a.dtype.kind not in "fiub":
            raise TypeError(
                f"{what}[{b}] has dtype {a.dtype}: bags must hold real numbers"
            )
        shape = a.shape
        if len(shape) != 2:
            hint = (
                " (a single instance x of one bag is x.reshape(1, -1))"
                if len(shape) == 1
                else ""
            )
            raise ValueError(
                f"{what}[{b}] is {len(shape)}-D with shape {shape}: every bag must be a "
                f"2-D array (instances x features){hint}"
            )
        if shape[1] != expected:
            if shape[0] == 0:
                raise ValueError(
                    f"{what}[{b}] is empty: every bag needs at least one instance"
                )
            if shape[1] == 0:
                raise ValueError(f"{what}[{b}] has no features")
            if expected is not None:
                source = (
                    "the fitted model expects" if n_features is not None else f"{what}[0] has"
                )
                raise ValueError(
                    f"{what}[{b}] has {shape[1]} features but {source} {expected}"
                )
            expected = shape[1]
        if shape[0] == 0:
            raise ValueError(f"{what}[{b}] is empty: every bag needs at least one instance")
        arrays[b] = a
        lengths[b] = shape[0]
    x = np.ascontiguousarray(np.concatenate(arrays, axis=0, dtype=np.float64))
    starts = np.zeros(n_bags + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    if not np.isfinite(x.sum()) and not np.isfinite(x).all():
        row, col = np.argwhere(~np.isfinite(x))[0]
        b = int(np.searchsorted(starts, row, side="right") - 1)
        value = x[row, col]
        raise ValueError(
            f"{what}[{b}] instance {int(row - starts[b])} feature {int(col)} is {value}: "
            "every value must be finite"
        )
    return x, starts.tolist()


def check_labels(y: npt.ArrayLike, n_bags: int) -> tuple[npt.NDArray[Any], list[int]]:
    """Validate bag labels: a 1-D sequence with one label per bag.

    Parameters
    ----------
    y : array-like of shape (n_bags,)
        Labels of any type ``numpy.unique`` can sort.
    n_bags : int
        The number of bags.

    Returns
    -------
    classes : ndarray
        The sorted distinct labels.
    indices : list of int
        The class index of every bag.
    """
    if y is None:
        raise ValueError("y is required: one label per bag")
    y = np.asarray(y)
    if y.ndim != 1:
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        else:
            raise ValueError(f"y must be 1-D (one label per bag), got shape {y.shape}")
    if len(y) != n_bags:
        raise ValueError(f"{len(y)} labels for {n_bags} bags")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        b = int(np.argwhere(~np.isfinite(y))[0][0])
        raise ValueError(f"y[{b}] is {y[b]}: labels must be finite")
    if y.dtype.kind == "f":
        fractional = np.flatnonzero(y != np.round(y))
        if fractional.size:
            b = int(fractional[0])
            raise ValueError(
                f"y[{b}] is {y[b]}: labels are classes; a continuous target is "
                "regression, which these classifiers do not do"
            )
    classes, indices = np.unique(y, return_inverse=True)
    return classes, indices.ravel().tolist()


def native_bags(
    bags: BagsLike,
    y: Optional[npt.ArrayLike] = None,
    n_features: Optional[int] = None,
    what: str = "bags",
) -> tuple[_native.Bags, Optional[npt.NDArray[Any]]]:
    """Validated bags (and labels) as the native layer's ``Bags``.

    Returns
    -------
    native : miltk._native.Bags
    classes : ndarray or None
        The sorted distinct labels when ``y`` is given.
    """
    classes, indices, n_classes = None, None, 0
    if y is not None:
        if not hasattr(bags, "__len__") or isinstance(bags, (str, bytes)):
            check_bags(bags, what=what)  # raises the TypeError
        classes, indices = check_labels(y, len(bags))
        n_classes = len(classes)
    # Valid lists of float64 arrays go straight to the native layer; anything else (or
    # anything invalid) takes the Python path, whose errors name the bag at fault.
    native = _native.Bags.from_arrays(bags, n_features, indices, n_classes, what)
    if native is None:
        x, starts = check_bags(bags, n_features=n_features, what=what)
        native = _native.Bags(x, starts, indices, n_classes, name=what)
    return native, classes


def native_labelled_bags(
    bags: BagsLike, y: npt.ArrayLike, what: str = "bags"
) -> tuple[_native.Bags, npt.NDArray[Any]]:
    """:func:`native_bags` of labelled bags: the native ``Bags`` and the sorted labels."""
    native, classes = native_bags(bags, y, what=what)
    assert classes is not None  # y was given
    return native, classes


def split_rows(x: Bag, starts: Sequence[int]) -> list[Bag]:
    """The rows of ``x`` as one array per bag (views, no copies)."""
    return [x[starts[b]:starts[b + 1]] for b in range(len(starts) - 1)]


def bags_from_instances(
    X: npt.ArrayLike, bag_ids: npt.ArrayLike
) -> tuple[list[Bag], npt.NDArray[Any]]:
    """Group the rows of one instance matrix into bags by bag id.

    Parameters
    ----------
    X : array-like of shape (n_instances, n_features)
        One row per instance.
    bag_ids : array-like of shape (n_instances,)
        The bag of every row. Bags are returned in the order their ids first appear;
        rows of a bag keep their order.

    Returns
    -------
    bags : list of ndarray
        One (instances x features) array per bag.
    ids : ndarray
        The bag id of each returned bag.

    Examples
    --------
    >>> import numpy as np
    >>> bags, ids = bags_from_instances(np.arange(8.0).reshape(4, 2), ["a", "b", "a", "c"])
    >>> [b.shape for b in bags], ids.tolist()
    ([(2, 2), (1, 2), (1, 2)], ['a', 'b', 'c'])
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (instances x features), got shape {X.shape}")
    bag_ids = np.asarray(bag_ids)
    if bag_ids.ndim != 1 or len(bag_ids) != X.shape[0]:
        raise ValueError(
            f"bag_ids must be 1-D with one id per row of X ({X.shape[0]}), "
            f"got shape {bag_ids.shape}"
        )
    ids, first, inverse = np.unique(bag_ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    bag_of_row = rank[inverse.ravel()]
    rows = np.argsort(bag_of_row, kind="stable")
    counts = np.bincount(bag_of_row, minlength=len(order))
    bounds = np.concatenate([[0], np.cumsum(counts)])
    grouped = X[rows]
    bags = [grouped[bounds[i]:bounds[i + 1]] for i in range(len(order))]
    return bags, ids[order]


def check_positive_int(name: str, value: object, minimum: int = 1) -> int:
    """A ``ValueError``/``TypeError`` unless ``value`` is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)
