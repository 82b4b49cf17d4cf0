"""Shared machinery of the estimators: pickling of native fitted state."""

from sklearn.utils.validation import check_is_fitted

from . import _native


def _freeze(value):
    """A picklable form of a native fitted object: the library's JSON, plus the training
    bags the object keeps for export."""
    kinds = {
        _native.FittedClassifier: "classifier",
        _native.FittedProjection: "projection",
        _native.FittedCluster: "cluster",
    }
    kind = kinds.get(type(value))
    if kind is None:
        return value
    bags = value.training_bags()
    arrays = None if bags is None else bags.arrays()
    return ("miltk-native", kind, value.to_json(), arrays)


def _thaw(value):
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == "miltk-native"):
        return value
    _, kind, text, arrays = value
    train = None
    if arrays is not None:
        x, starts, labels = arrays
        train = _native.Bags(x, starts, labels)
    rebuild = {
        "classifier": _native.FittedClassifier,
        "projection": _native.FittedProjection,
        "cluster": _native.FittedCluster,
    }[kind]
    return rebuild.from_json(text, train)


class NativeStateMixin:
    """Pickles the native fitted objects held in attributes as the library's JSON.

    The fitted models are stored as the library saves them (``serde_json`` of
    ``ClassifierModel``, ``LinearProjection`` or ``ClusterModel``) and validated when
    read back, so a pickle round trip gives the same predictions.
    """

    def __getstate__(self):
        state = super().__getstate__()
        return {k: _freeze(v) for k, v in state.items()}

    def __setstate__(self, state):
        super().__setstate__({k: _thaw(v) for k, v in state.items()})


def fitted(estimator, attribute="model_"):
    """Raise sklearn's ``NotFittedError`` unless ``estimator`` has been fitted."""
    check_is_fitted(estimator, attribute)
