"""The examples in the docstrings run."""

import doctest

import pytest

import miltk
from miltk import _bags, classifiers, datasets, deploy, model_selection


@pytest.mark.parametrize(
    "module", [_bags, classifiers, datasets, deploy, model_selection], ids=lambda m: m.__name__
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_public_names_are_documented():
    import inspect

    for name in miltk.__all__:
        obj = getattr(miltk, name)
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if not attr.startswith("_") and (callable(value) or isinstance(value, property)):
                    assert inspect.getdoc(value), f"{name}.{attr}"
