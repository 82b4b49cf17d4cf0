"""Shared machinery of the estimators: pickling of native fitted state, and the
scikit-learn readings of ``random_state`` and ``n_jobs``."""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import Any, Optional, Union, cast

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _native


_Fitted = Union[_native.FittedClassifier, _native.FittedProjection, _native.FittedCluster]


def _freeze(value: object) -> object:
    """A picklable form of a native fitted object: the library's JSON, plus the training
    bags the object keeps for export."""
    if isinstance(value, _native.FittedClassifier):
        kind = "classifier"
    elif isinstance(value, _native.FittedProjection):
        kind = "projection"
    elif isinstance(value, _native.FittedCluster):
        kind = "cluster"
    else:
        return value
    bags = value.training_bags()
    arrays = None if bags is None else bags.arrays()
    return ("miltk-native", kind, value.to_json(), arrays)


def _thaw(value: object) -> object:
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == "miltk-native"):
        return value
    _, kind, text, arrays = value
    train = None
    if arrays is not None:
        x, starts, labels = arrays
        train = _native.Bags(x, starts, labels)
    fitted: _Fitted
    if kind == "classifier":
        fitted = _native.FittedClassifier.from_json(text, train)
    elif kind == "projection":
        fitted = _native.FittedProjection.from_json(text, train)
    elif kind == "cluster":
        fitted = _native.FittedCluster.from_json(text, train)
    else:
        raise ValueError(f"malformed pickled state: unknown native kind {kind!r}")
    return fitted


class NativeStateMixin:
    """Pickles the native fitted objects held in attributes as the library's JSON.

    The fitted models are stored as the library saves them (``serde_json`` of
    ``ClassifierModel``, ``LinearProjection`` or ``ClusterModel``) and validated when
    read back, so a pickle round trip gives the same predictions.
    """

    def __getstate__(self) -> dict[str, Any]:
        state = cast("dict[str, Any]", super().__getstate__())
        return {k: _freeze(v) for k, v in state.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__({k: _thaw(v) for k, v in state.items()})  # type: ignore[misc]


def fitted(estimator: object, attribute: str = "model_") -> None:
    """Raise sklearn's ``NotFittedError`` unless ``estimator`` has been fitted."""
    check_is_fitted(estimator, attribute)


#: Default of a deprecated parameter: the parameter was not given.
DEPRECATED = "deprecated"

#: What ``random_state`` takes, as in scikit-learn.
RandomState = Union[int, np.random.RandomState, np.random.Generator, None]

_SEED_LIMIT = 2**64


def seed_from_random_state(random_state: RandomState, name: str = "random_state") -> int:
    """The library's integer seed for ``random_state``, as scikit-learn reads it.

    An int is the seed itself (0 to 2**64 - 1); ``None`` draws one from numpy's global
    generator (``numpy.random``), so repeated calls differ unless ``numpy.random.seed``
    was set; a ``numpy.random.RandomState`` or ``Generator`` gives one draw of its own.
    """
    if random_state is None:
        return int(np.random.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    if isinstance(random_state, bool) or not isinstance(random_state, Integral):
        raise TypeError(
            f"{name} must be None, an int, a numpy.random.RandomState or a "
            f"numpy.random.Generator, not {type(random_state).__name__}"
        )
    if not 0 <= random_state < _SEED_LIMIT:
        raise ValueError(f"{name}={random_state} is outside 0 to 2**64 - 1")
    return int(random_state)


def renamed(old: str, old_value: Any, new: str, new_value: Any, default: object) -> Any:
    """``new_value``, or ``old_value`` with a ``FutureWarning`` when the old name was used.

    ``default`` is the new parameter's default: giving both names a value is an error.
    """
    if isinstance(old_value, str) and old_value == DEPRECATED:
        return new_value
    if not (new_value is default or new_value == default):
        raise TypeError(f"give {new}= only: {old}= is its deprecated name")
    warnings.warn(
        f"{old}= is deprecated and will be removed in the next release: use {new}=",
        FutureWarning,
        stacklevel=3,
    )
    return old_value


def estimator_seed(estimator: Any) -> int:
    """The seed of an estimator's ``random_state`` (or of its deprecated ``seed``)."""
    random_state = renamed(
        "seed", getattr(estimator, "seed", DEPRECATED), "random_state",
        estimator.random_state, 1,
    )
    return seed_from_random_state(random_state)


def n_threads(n_jobs: Optional[int], name: str = "n_jobs") -> int:
    """The native layer's thread count for ``n_jobs``, as scikit-learn reads it.

    ``None`` is 0 (the default of :func:`miltk.set_num_threads`: all cores unless set),
    -1 all cores, -2 all but one, ...; ``k > 0`` is ``k`` threads; 0 is refused.
    """
    if n_jobs is None:
        return 0
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral):
        raise TypeError(f"{name} must be None or an int, not {type(n_jobs).__name__}")
    if n_jobs == 0:
        raise ValueError(f"{name}=0: use None (all cores), -1 (all cores) or k > 0 threads")
    if n_jobs < 0:
        return max(1, _native.num_cores() + 1 + int(n_jobs))
    return int(n_jobs)


def pipeline_parts(estimator: Any, what: str = "the estimator") -> tuple[Any, Any]:
    """(projection or None, classifier) of a miltk classifier or of a ``Pipeline`` of one
    miltk projection and one miltk classifier (``None``/``"passthrough"`` steps skipped)."""
    steps = getattr(estimator, "steps", None)
    if steps is None:
        return None, estimator
    models = [step for _, step in steps if step is not None and step != "passthrough"]
    if len(models) == 1:
        return None, models[0]
    if len(models) == 2:
        return models[0], models[1]
    raise ValueError(
        f"{what} must be a classifier, or a Pipeline of one miltk projection and one miltk "
        f"classifier; this Pipeline has {len(models)} steps"
    )
