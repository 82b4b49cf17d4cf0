"""scikit-learn's estimator checks that apply to bag inputs, for every estimator:
clone, get_params/set_params, random_state, pickling and n_jobs; and the conventions
of the splitter, the loaders, the native cross-validation and the deprecated names."""

import csv
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import (
    BaseCrossValidator,
    GridSearchCV,
    StratifiedKFold,
    cross_validate,
)
from sklearn.utils import Bunch

import miltk
from conftest import mil_binary, run_mil

# Every estimator, with parameters that keep a fit on a few dozen bags short.
ESTIMATORS = {
    "CitationKNN": lambda **kw: miltk.CitationKNN(references=3, **kw),
    "MILR": lambda **kw: miltk.MILR(pooling="mean", ridge=1.0, **kw),
    "SetKernelSVM": lambda **kw: miltk.SetKernelSVM(kernel="kand", epsilon=0.2, **kw),
    "SimpleMI": lambda **kw: miltk.SimpleMI(ridge=1.0, **kw),
    "MIWrapper": lambda **kw: miltk.MIWrapper(ridge=1.0, **kw),
    "MiVLAD": lambda **kw: miltk.MiVLAD(n_clusters=2, **kw),
    "MiFV": lambda **kw: miltk.MiFV(n_clusters=2, **kw),
    "MiSVM": lambda **kw: miltk.MiSVM(**kw),
    "MISVM": lambda **kw: miltk.MISVM(kernel="rbf", **kw),
    "AutoMIL": lambda **kw: miltk.AutoMIL(**kw),
    "SMIL": lambda **kw: miltk.SMIL(C=10.0, **kw),
    "SBMIL": lambda **kw: miltk.SBMIL(kernel="rbf", eta=0.3, **kw),
    "DiverseDensity": lambda **kw: miltk.DiverseDensity(max_restarts=5, **kw),
    "EMDD": lambda **kw: miltk.EMDD(max_restarts=5, max_iter=3, **kw),
    "MILES": lambda **kw: miltk.MILES(max_prototypes=50, **kw),
    "MILESEmbedding": lambda **kw: miltk.MILESEmbedding(max_prototypes=50, **kw),
    "MIGraph": lambda **kw: miltk.MIGraph(**kw),
    "AttentionMIL": lambda **kw: miltk.AttentionMIL(hidden=16, epochs=5, **kw),
    "PCA": lambda **kw: miltk.PCA(n_components=3, **kw),
    "LDA": lambda **kw: miltk.LDA(n_components=1, **kw),
    "LFDA": lambda **kw: miltk.LFDA(n_components=3, **kw),
    "CLFDA": lambda **kw: miltk.CLFDA(n_components=3, **kw),
    "BMIDA": lambda **kw: miltk.BMIDA(n_components=3, **kw),
    "MMIDA": lambda **kw: miltk.MMIDA(n_components=3, **kw),
    "MIALM": lambda **kw: miltk.MIALM(n_components=3, **kw),
    "MIDR": lambda **kw: miltk.MIDR(n_components=3, **kw),
    "M3IC": lambda **kw: miltk.M3IC(n_clusters=2, restarts=2, **kw),
    "BAMIC": lambda **kw: miltk.BAMIC(n_clusters=2, restarts=2, **kw),
}
# The randomised estimators that still accept the deprecated name seed=.
SEED_ALIAS = ["SetKernelSVM", "MIALM", "MIDR", "M3IC", "BAMIC"]
RANDOMISED = SEED_ALIAS + [
    "MiVLAD",
    "MiFV",
    "DiverseDensity",
    "EMDD",
    "AutoMIL",
    "MILES",
    "MILESEmbedding",
    "AttentionMIL",
]


@pytest.fixture(scope="module")
def small(musk1):
    bags, y, _ = musk1
    return list(bags[::3]), y[::3], list(bags[1::3])


def outputs(est, test):
    """What a fitted estimator computes on `test`, as arrays."""
    if hasattr(est, "transform"):
        return [np.vstack(est.transform(test))]
    out = [est.predict(test)]
    for method in ("predict_proba", "decision_function"):
        if hasattr(est, method):
            out.append(getattr(est, method)(test))
    if hasattr(est, "labels_"):
        out.append(est.labels_)
    return out


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, z) for x, z in zip(a, b))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_public_estimator_is_covered(name):
    assert name in miltk.__all__


def test_the_list_is_complete():
    from sklearn.base import BaseEstimator

    estimators = {
        n for n in miltk.__all__
        if isinstance(getattr(miltk, n), type) and issubclass(getattr(miltk, n), BaseEstimator)
    }
    assert estimators == set(ESTIMATORS)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_clone_and_params_round_trip(name):
    est = ESTIMATORS[name](n_jobs=2)
    params = est.get_params()
    assert params["n_jobs"] == 2
    copy = clone(est)
    assert copy is not est and copy.get_params() == params
    fresh = type(est)().set_params(**params)
    assert fresh.get_params() == params
    assert repr(fresh) == repr(est)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_pickled_fitted_estimator_computes_the_same(name, small):
    train, y, test = small
    est = ESTIMATORS[name]().fit(train, y)
    again = pickle.loads(pickle.dumps(est))
    assert same(outputs(again, test), outputs(est, test))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_n_jobs_does_not_change_results(name, small):
    train, y, test = small
    one = ESTIMATORS[name](n_jobs=1).fit(train, y)
    two = ESTIMATORS[name](n_jobs=2).fit(train, y)
    assert same(outputs(one, test), outputs(two, test))


@pytest.mark.parametrize("name", ["CitationKNN", "PCA", "M3IC"])
def test_n_jobs_is_checked(name, small):
    train, y, _ = small
    with pytest.raises(ValueError, match="n_jobs=0"):
        ESTIMATORS[name](n_jobs=0).fit(train, y)
    with pytest.raises(ValueError, match="n_jobs=100000"):
        ESTIMATORS[name](n_jobs=100000).fit(train, y)
    with pytest.raises(TypeError, match="n_jobs"):
        ESTIMATORS[name](n_jobs=1.5).fit(train, y)


@pytest.mark.parametrize("name", RANDOMISED)
def test_random_state(name, small):
    train, y, test = small
    make = ESTIMATORS[name]
    a = outputs(make(random_state=5).fit(train, y), test)
    # An int gives the same result on every fit.
    assert same(a, outputs(make(random_state=5).fit(train, y), test))
    # A RandomState or Generator gives one draw: equal generators, equal results.
    for rng in (np.random.RandomState, np.random.default_rng):
        assert same(
            outputs(make(random_state=rng(3)).fit(train, y), test),
            outputs(make(random_state=rng(3)).fit(train, y), test),
        )
    # None draws from numpy's global generator.
    np.random.seed(11)
    b = outputs(make(random_state=None).fit(train, y), test)
    np.random.seed(11)
    assert same(b, outputs(make(random_state=None).fit(train, y), test))
    with pytest.raises(ValueError, match="random_state=-1"):
        make(random_state=-1).fit(train, y)
    with pytest.raises(TypeError, match="random_state"):
        make(random_state="seven").fit(train, y)


def test_random_state_none_varies(small):
    # The box-kernel estimates depend on the seed: fits with None differ.
    train, y, test = small
    values = {
        miltk.SetKernelSVM(kernel="kand", epsilon=0.2, random_state=None)
        .fit(train, y)
        .decision_function(test)
        .tobytes()
        for _ in range(3)
    }
    assert len(values) > 1
    grams = {miltk.gram_matrix(train, random_state=None, log=True).tobytes() for _ in range(3)}
    assert len(grams) > 1


@pytest.mark.parametrize("name", SEED_ALIAS)
def test_seed_is_a_deprecated_alias(name, small):
    train, y, test = small
    with pytest.warns(FutureWarning, match="seed= is deprecated"):
        old = ESTIMATORS[name](seed=4).fit(train, y)
    new = ESTIMATORS[name](random_state=4).fit(train, y)
    assert same(outputs(old, test), outputs(new, test))
    with pytest.raises(TypeError, match="random_state= only"):
        ESTIMATORS[name](seed=4, random_state=3).fit(train, y)


def test_map_is_a_deprecated_alias(small):
    train, y, test = small
    with pytest.warns(FutureWarning, match="map= is deprecated"):
        old = miltk.SetKernelSVM(kernel="nsk", map="emp").fit(train, y)
    new = miltk.SetKernelSVM(kernel="nsk", kernel_map="emp").fit(train, y)
    plain = miltk.SetKernelSVM(kernel="nsk").fit(train, y)
    assert np.array_equal(old.decision_function(test), new.decision_function(test))
    assert not np.array_equal(new.decision_function(test), plain.decision_function(test))


def test_functions_take_random_state(musk1):
    bags, y, _ = musk1
    with pytest.warns(FutureWarning):
        old = miltk.gram_matrix(bags[:20], seed=3, log=True)
    assert np.array_equal(old, miltk.gram_matrix(bags[:20], random_state=3, log=True))
    with pytest.warns(FutureWarning):
        folds = miltk.stratified_bag_folds(y, 5, seed=3, repeats=2)
    again = miltk.stratified_bag_folds(y, 5, random_state=3, n_repeats=2)
    assert len(folds) == 10
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again))


def test_export_has_one_path(musk1):
    bags, y, _ = musk1
    clf = miltk.MILR(pooling="mean", ridge=1.0).fit(bags, y)
    with pytest.warns(FutureWarning, match="export method is deprecated"):
        old = clf.export("q15")
    assert old == miltk.export(clf, "q15")
    assert miltk.export is miltk.deploy.export


def test_splitter_is_a_scikit_learn_cross_validator(musk1):
    bags, y, _ = musk1
    cv = miltk.StratifiedBagKFold(n_splits=4, random_state=3, n_repeats=2)
    assert isinstance(cv, BaseCrossValidator)
    assert cv.get_n_splits() == 8
    # The same folds as the library's fold assignment for that seed.
    native = [f for folds in miltk._native.stratified_folds(
        np.unique(y, return_inverse=True)[1].tolist(), 4, 3, 2) for f in folds]
    assert [t.tolist() for _, t in cv.split(bags, y)] == native
    result = cross_validate(miltk.CitationKNN(), bags, y, cv=cv)
    assert len(result["test_score"]) == 8
    grid = GridSearchCV(miltk.CitationKNN(), {"references": [2, 3]}, cv=cv).fit(bags, y)
    assert grid.best_params_["references"] in (2, 3)
    with pytest.warns(FutureWarning):
        old = miltk.StratifiedBagKFold(4, seed=3, repeats=2)
    assert old.random_state == 3 and old.n_repeats == 2


def test_splitter_folds_are_mil_cv_folds(musk1, tmp_path):
    if mil_binary() is None:
        pytest.skip("the mil program is not built")
    bags, y, ids = musk1
    out = tmp_path / "folds.csv"
    run_mil("cv", "musk1", "--classifier", "milr", "--pooling", "mean", "--folds", "5",
            "--repeats", "2", "--seed", "7", "--save-folds", str(out))
    position = {str(i): k for k, i in enumerate(ids)}
    expected = {}
    with open(out, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (int(row["repetition"]), int(row["fold"]))
            expected.setdefault(key, []).append(position[row["bag_id"]])
    cv = miltk.StratifiedBagKFold(5, random_state=7, n_repeats=2)
    tests = [sorted(t.tolist()) for _, t in cv.split(bags, y)]
    assert tests == [sorted(expected[(r, f)]) for r in range(2) for f in range(5)]


def test_unshuffled_splitter_deals_in_order():
    y = np.array([1, 0, 1, 0, 0, 1, 0])
    cv = miltk.StratifiedBagKFold(3, shuffle=False)
    tests = [t.tolist() for _, t in cv.split(y, y)]
    # Class 0 (bags 1, 3, 4, 6) then class 1 (0, 2, 5), dealt round-robin to 3 folds.
    assert tests == [[1, 5, 6], [0, 3], [2, 4]]
    with pytest.raises(ValueError, match="n_repeats=2"):
        miltk.StratifiedBagKFold(3, n_repeats=2, shuffle=False)
    with pytest.raises(ValueError, match="n_splits"):
        miltk.StratifiedBagKFold(1)


def test_cross_validate_native_returns_scikit_learns_keys(musk1):
    bags, y, _ = musk1
    cv = miltk.StratifiedBagKFold(5, random_state=2)
    native = miltk.cross_validate_native(
        miltk.CitationKNN(), bags, y, cv=cv, n_jobs=2, return_estimator=True
    )
    python = cross_validate(miltk.CitationKNN(), bags, y, cv=cv, return_estimator=True)
    assert set(python) <= set(native)
    assert np.allclose(native["test_score"], python["test_score"])
    assert len(native["fit_time"]) == len(native["score_time"]) == 5
    for a, b in zip(native["estimator"], python["estimator"]):
        assert np.array_equal(a.predict(bags), b.predict(bags))
    # An int is the StratifiedBagKFold of random_state.
    by_int = miltk.cross_validate_native(miltk.CitationKNN(), bags, y, cv=5, random_state=2)
    assert np.array_equal(by_int["test_score"], native["test_score"])
    assert by_int["accuracy"] == pytest.approx(np.mean(by_int["predictions"] == y), abs=1e-12)
    # Any splitter that partitions the bags.
    skf = StratifiedKFold(4, shuffle=True, random_state=0)
    given = miltk.cross_validate_native(miltk.CitationKNN(), bags, y, cv=skf)
    assert np.allclose(given["test_score"], cross_validate(miltk.CitationKNN(), bags, y, cv=skf)["test_score"])
    with pytest.raises(ValueError, match="exactly one test fold"):
        miltk.cross_validate_native(
            miltk.CitationKNN(), bags, y, cv=[(np.arange(10, 92), np.arange(10))]
        )
    with pytest.warns(FutureWarning):
        old = miltk.library_cross_validate(miltk.CitationKNN(), bags, y, n_splits=5, seed=2)
    assert np.array_equal(old["per_fold"], native["test_score"])


def test_set_num_threads_at_any_time(musk1):
    bags, y, _ = musk1
    before = miltk.get_num_threads()
    try:
        miltk.CitationKNN().fit(bags[::9], y[::9])
        miltk.set_num_threads(1)
        assert miltk.get_num_threads() == 1
        miltk.set_num_threads(2)
        assert miltk.get_num_threads() == 2
        with pytest.raises(ValueError, match="4 per core"):
            miltk.set_num_threads(100000)
        with pytest.raises(ValueError):
            miltk.set_num_threads(0)
    finally:
        miltk.set_num_threads(before)


@pytest.mark.parametrize("name", ["musk1", "corel3"])
def test_loaders_return_a_bunch(name):
    loader = getattr(miltk, f"load_{name}")
    data = loader()
    assert isinstance(data, Bunch)
    bags, y = loader(return_X_y=True)
    assert data.data is data.bags
    assert all(np.array_equal(a, b) for a, b in zip(data.data, bags))
    assert np.array_equal(data.target, y)
    assert list(data.target_names) == sorted(set(y.tolist()))
    _, _, ids = loader(return_ids=True)
    assert np.array_equal(data.bag_ids, ids) and len(ids) == len(bags)
    assert f"{len(bags)} bags" in data.DESCR
    assert set(data) == {"data", "bags", "target", "target_names", "bag_ids", "DESCR"}


def test_no_warning_on_the_new_names(musk1):
    bags, y, _ = musk1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        miltk.SetKernelSVM(kernel="nsk", kernel_map="emp", random_state=2).fit(bags[::4], y[::4])
        miltk.StratifiedBagKFold(5, random_state=1, n_repeats=2)
        miltk.load_musk1()
