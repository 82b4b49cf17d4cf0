"""The scikit-learn contract: clone, get/set_params, pickling, labels of any type,
pipelines and grid search."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

import miltk

ESTIMATORS = [
    miltk.CitationKNN(references=3, citers=5, scaling="zscore"),
    miltk.MILR(pooling="mean", ridge=0.5),
    miltk.SetKernelSVM(kernel="kmin", epsilon=0.2, C=10.0),
    miltk.BMIDA(n_components=5, alpha=0.2),
    miltk.MIALM(n_components=4, random_state=3),
    miltk.M3IC(n_clusters=3, C=2.0),
    miltk.BAMIC(n_clusters=2, distance="max"),
]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_clone_and_params(est):
    params = est.get_params()
    copy = clone(est)
    assert copy is not est
    assert copy.get_params() == params
    key = next(iter(params))
    copy.set_params(**{key: params[key]})
    assert repr(copy) == repr(est)


@pytest.fixture(scope="module")
def split(musk1):
    bags, y, _ = musk1
    return bags[::2], y[::2], bags[1::2], y[1::2]


@pytest.mark.parametrize(
    "est",
    [
        miltk.CitationKNN(),
        miltk.MILR(pooling="mean", ridge=1.0),
        miltk.SetKernelSVM(kernel="kand"),
        miltk.SetKernelSVM(kernel="nsk", rho=1.0, C=1.0),
    ],
    ids=["citation-knn", "milr", "svm-kand", "svm-nsk"],
)
def test_classifier_pickle_round_trip(est, split):
    train, ytrain, test, ytest = split
    est.fit(train, ytrain)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(test), est.predict(test))
    if hasattr(est, "predict_proba"):
        assert np.array_equal(again.predict_proba(test), est.predict_proba(test))
    else:
        assert np.array_equal(again.decision_function(test), est.decision_function(test))
    assert 0.5 < est.score(test, ytest) <= 1.0


def test_projection_and_pipeline_pickle(split):
    train, ytrain, test, _ = split
    pipe = Pipeline([("bmida", miltk.BMIDA(n_components=5)), ("knn", miltk.CitationKNN())])
    pipe.fit(train, ytrain)
    again = pickle.loads(pickle.dumps(pipe))
    assert np.array_equal(again.predict(test), pipe.predict(test))
    a = pipe.named_steps["bmida"].transform(test)
    b = again.named_steps["bmida"].transform(test)
    assert isinstance(b, miltk.ProjectedBags)
    c = pickle.loads(pickle.dumps(b))
    assert isinstance(c, miltk.ProjectedBags) and c.projection == "bmida"
    assert all(np.array_equal(x, z) for x, z in zip(a, b))
    # Export still works after the round trip (the training bags travel with the model).
    assert miltk.export(again, "q15") == miltk.export(pipe, "q15")


def test_clustering_pickle(corel3):
    bags, _ = corel3
    for est in (miltk.M3IC(n_clusters=3), miltk.BAMIC(n_clusters=3, restarts=2)):
        labels = est.fit_predict(bags[:60])
        again = pickle.loads(pickle.dumps(est))
        assert np.array_equal(again.predict(bags[:60]), labels)


def test_labels_of_any_type(split):
    train, ytrain, test, _ = split
    names = np.where(ytrain == 1, "musk", "not musk")
    clf = miltk.MILR(pooling="mean", ridge=1.0).fit(train, names)
    assert list(clf.classes_) == ["musk", "not musk"]
    numeric = miltk.MILR(pooling="mean", ridge=1.0).fit(train, ytrain)
    expected = np.where(numeric.predict(test) == 1, "musk", "not musk")
    assert np.array_equal(clf.predict(test), expected)
    # -1/+1 labels and floats
    pm = miltk.CitationKNN().fit(train, np.where(ytrain == 1, 1.0, -1.0))
    assert set(pm.predict(test)) <= {-1.0, 1.0}


def test_projected_bags_mark_auto_scaling(split):
    train, ytrain, test, _ = split
    proj = miltk.BMIDA(n_components=5).fit(train, ytrain)
    z = proj.transform(train)
    assert isinstance(z, miltk.ProjectedBags) and z[0].shape[1] == 5
    auto = miltk.CitationKNN().fit(z, ytrain)
    none = miltk.CitationKNN(scaling="none").fit(list(z), ytrain)
    zscore = miltk.CitationKNN(scaling="zscore").fit(z, ytrain)
    assert auto.projected_input_
    zt = proj.transform(test)
    assert np.array_equal(auto.predict_proba(zt), none.predict_proba(zt))
    assert not miltk.CitationKNN().fit(list(z), ytrain).projected_input_
    assert np.array_equal(
        miltk.CitationKNN().fit(list(z), ytrain).predict_proba(zt), zscore.predict_proba(zt)
    )


def test_grid_search_over_pipeline(musk1):
    bags, y, _ = musk1
    pipe = Pipeline([("proj", miltk.BMIDA()), ("knn", miltk.CitationKNN())])
    grid = GridSearchCV(
        pipe,
        {"proj__n_components": [5, 10], "knn__references": [2, 3]},
        cv=miltk.StratifiedBagKFold(n_splits=3, random_state=1),
    )
    grid.fit(bags, y)
    assert set(grid.best_params_) == {"proj__n_components", "knn__references"}
    assert grid.best_score_ > 0.7
    assert grid.predict(bags[:5]).shape == (5,)


def test_cross_val_score_with_splitter(musk1):
    bags, y, _ = musk1
    a = cross_val_score(miltk.CitationKNN(), bags, y, cv=miltk.StratifiedBagKFold(5, random_state=2))
    b = cross_val_score(miltk.CitationKNN(), bags, y, cv=miltk.stratified_bag_folds(y, 5, 2))
    assert np.array_equal(a, b)


def test_transformers_and_predict_proba_shapes(corel3):
    bags, y = corel3
    bags, y = bags[::3], y[::3]
    for proj in (miltk.PCA(4), miltk.LDA(2), miltk.LFDA(3), miltk.CLFDA(3), miltk.MMIDA(3)):
        z = proj.fit(bags, y).transform(bags)
        assert len(z) == len(bags) and z[0].shape[1] == proj.n_components
        assert proj.components_.shape == (230, proj.n_components)
    with pytest.raises(ValueError, match="binary"):
        miltk.MIDR(3).fit(bags, y)
    p = miltk.MILR(pooling="mean", ridge=1.0).fit(bags, y).predict_proba(bags)
    assert p.shape == (len(bags), 3) and np.allclose(p.sum(axis=1), 1.0)
    p = miltk.CitationKNN().fit(bags, y).predict_proba(bags)
    assert np.allclose(p.sum(axis=1), 1.0)


def test_score_equals_accuracy_score(split):
    from sklearn.metrics import accuracy_score

    train, ytrain, test, ytest = split
    clf = miltk.CitationKNN().fit(train, ytrain)
    predicted = clf.predict(test)
    assert clf.score(test, ytest) == accuracy_score(ytest, predicted)
    w = np.linspace(0.1, 1.0, len(test))
    assert clf.score(test, ytest, w) == pytest.approx(accuracy_score(ytest, predicted, sample_weight=w))
    assert clf.score(test, list(ytest)) == accuracy_score(ytest, predicted)


@pytest.mark.parametrize("est", [miltk.MILES(), miltk.MIGraph()], ids=lambda e: type(e).__name__)
def test_one_vs_rest_on_three_classes(corel3, est):
    # One machine per class against the rest: a decision value per class, the largest
    # predicts, and the labels are the data's own.
    bags, y = corel3
    train, ytrain, test = bags[::2], y[::2], bags[1::2]
    clf = clone(est).fit(train, ytrain)
    f = clf.decision_function(test)
    assert f.shape == (len(test), 3)
    assert np.array_equal(clf.predict(test), clf.classes_[f.argmax(axis=1)])
    assert set(clf.classes_) == set(y)
    assert clf.score(bags[1::2], y[1::2]) > 0.6
