"""predict_instances: one score array per bag, the same numbers as `mil predict
--instances` on the same fitted model, refused for the models that score no instance;
and the key-instance metrics against brute force."""

import itertools

import numpy as np
import pytest

import miltk
from conftest import run_mil

# Every estimator whose model scores instances, with the kind of its scores.
SCORING = {
    "MILR": (lambda: miltk.MILR(pooling="mean", ridge=1.0), "probability"),
    "MIWrapper": (lambda: miltk.MIWrapper(ridge=1.0), "probability"),
    "MiVLAD": (lambda: miltk.MiVLAD(n_clusters=2), "contribution"),
    "MiFV": (lambda: miltk.MiFV(n_clusters=2), "contribution"),
    "MiSVM": (lambda: miltk.MiSVM(), "decision"),
    "MISVM": (lambda: miltk.MISVM(kernel="rbf"), "decision"),
    "SMIL": (lambda: miltk.SMIL(C=10.0), "decision"),
    "SBMIL": (lambda: miltk.SBMIL(kernel="rbf", eta=0.3), "decision"),
    "DiverseDensity": (lambda: miltk.DiverseDensity(max_restarts=5), "probability"),
    "EMDD": (lambda: miltk.EMDD(max_restarts=5, max_iter=3), "probability"),
    "SetKernelSVM": (
        lambda: miltk.SetKernelSVM(kernel="mi-rbf", scaling="minmax"),
        "contribution",
    ),
}
REFUSED = {
    "CitationKNN": lambda: miltk.CitationKNN(references=3),
    "SimpleMI": lambda: miltk.SimpleMI(ridge=1.0),
    "SetKernelSVM-kand": lambda: miltk.SetKernelSVM(kernel="kand", epsilon=0.2),
}


@pytest.fixture(scope="module")
def small(musk1):
    bags, y, ids = musk1
    return list(bags[::3]), y[::3], list(ids[::3])


@pytest.mark.parametrize("name", sorted(SCORING))
def test_shapes_kind_and_witness(small, name):
    make, kind = SCORING[name]
    bags, y, _ = small
    clf = make().fit(bags, y)
    assert clf.instance_score_kind_ == kind
    scores = clf.predict_instances(bags)
    assert isinstance(scores, list) and len(scores) == len(bags)
    for s, bag in zip(scores, bags):
        assert s.dtype == np.float64 and s.shape == (len(bag),)
        assert np.all(np.isfinite(s))
    threshold = clf.instance_threshold_
    assert threshold == {"decision": 0.0, "probability": 0.5, "contribution": None}[kind]
    if name in ("MiSVM", "MISVM", "SBMIL", "EMDD"):
        # The bag's score is its largest instance score, so a bag is predicted positive
        # exactly when one of its instances is above the threshold.
        predicted = clf.predict(bags)
        for s, label in zip(scores, predicted):
            assert (label == clf.classes_[1]) == bool(np.any(s > threshold))


@pytest.mark.parametrize("name", sorted(SCORING))
def test_agrees_with_mil_predict_instances(tmp_path, musk1, name):
    make, kind = SCORING[name]
    bags, y, ids = musk1
    clf = make().fit(bags[::2], y[::2])
    model = tmp_path / "model.json"
    model.write_text(clf.model_.to_json())
    report = run_mil("predict", str(model), "musk1", "--instances")
    if report is None:
        pytest.skip("the mil program is not built")
    assert report["score_kind"] == kind
    assert report["label_threshold"] == clf.instance_threshold_
    by_bag: dict[str, list[float]] = {}
    for row in report["instances"]:
        by_bag.setdefault(row["bag"], []).append(row["score"])
    scores = clf.predict_instances(bags)
    assert len(by_bag) == len(bags)
    for bag_id, s in zip(ids, scores):
        np.testing.assert_array_equal(s, by_bag[str(bag_id)])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_without_instance_scores(small, name):
    bags, y, _ = small
    clf = REFUSED[name]().fit(bags, y)
    assert clf.instance_score_kind_ == "none"
    assert clf.instance_threshold_ is None
    with pytest.raises(ValueError, match="defines no instance scores"):
        clf.predict_instances(bags)


def test_instance_auroc_matches_pair_counting():
    rng = np.random.default_rng(3)
    scores = [rng.integers(0, 5, size=n).astype(float) for n in (3, 1, 4, 2)]
    truth = [rng.random(len(s)) < 0.4 for s in scores]
    truth[0][0] = True
    truth[1][0] = False
    flat = list(zip(np.concatenate(scores), np.concatenate(truth)))
    pairs = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for (p, tp), (n, tn) in itertools.product(flat, flat)
        if tp and not tn
    ]
    assert miltk.instance_auroc(scores, truth) == pytest.approx(np.mean(pairs), abs=1e-12)
    assert miltk.instance_auroc(scores[:1], [np.ones(3, bool)]) is None
    with pytest.raises(ValueError):
        miltk.instance_auroc(scores, truth[:2])


def test_witness_precision_by_hand():
    scores = [np.array([0.9, 0.1]), np.array([0.3, 0.3]), np.array([0.2, 0.8])]
    truth = [np.array([True, False]), np.array([False, True]), np.array([True, False])]
    # Witnesses: 0 (true), 0 (the first of a tie: false), 1 (false).
    assert miltk.witness_precision(scores, truth, [True, True, True]) == pytest.approx(1 / 3)
    assert miltk.witness_precision(scores, truth, [True, False, False]) == 1.0
    assert miltk.witness_precision(scores, truth, [False, False, False]) is None
