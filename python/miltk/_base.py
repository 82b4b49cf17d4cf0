"""Shared machinery of the estimators: pickling of native fitted state."""

from sklearn.utils.validation import check_is_fitted

from . import _native


def _freeze(value):
    """A picklable form of a native fitted object: the library's JSON, plus the training
    bags the object keeps for export."""
    if isinstance(value, (_native.FittedClassifier, _native.FittedProjection)):
        bags = value.training_bags()
        arrays = None if bags is None else bags.arrays()
        kind = "classifier" if isinstance(value, _native.FittedClassifier) else "projection"
        return ("miltk-native", kind, value.to_json(), arrays)
    if isinstance(value, _native.FittedCluster):
        return ("miltk-native", "cluster", value.to_json(), None)
    return value


def _thaw(value):
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == "miltk-native"):
        return value
    _, kind, text, arrays = value
    if kind == "cluster":
        return _native.FittedCluster.from_json(text)
    train = None
    if arrays is not None:
        x, starts, labels = arrays
        train = _native.Bags(x, starts, labels)
    if kind == "classifier":
        return _native.FittedClassifier.from_json(text, train)
    return _native.FittedProjection.from_json(text, train)


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
