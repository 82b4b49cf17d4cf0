"""The Python face gives exactly what the library and the `mil` program give: the
cross-validation folds and predictions of `mil cv`, Gram matrices of `mil gram`,
clusterings of `mil cluster`, and the core's labels on exported models."""

import numpy as np
import pytest
from sklearn.model_selection import cross_val_predict, cross_val_score
from sklearn.pipeline import Pipeline

import miltk
from conftest import run_mil


def reference_cv(estimator, bags, y, ids, cli_args):
    """(pooled accuracy, out-of-fold label by bag id) from `mil cv` when it is built,
    else from the library's own cross-validation through the native module."""
    report = run_mil("cv", "musk1", *cli_args, "--folds", "10", "--seed", "1")
    if report is None:
        lib = miltk.cross_validate_native(estimator, bags, y, cv=10, random_state=1)
        return lib["accuracy"], {i: str(p) for i, p in zip(ids, lib["predictions"])}
    return report["accuracy"], {p["bag"]: p["label"] for p in report["predictions"]}


def python_cv(estimator, bags, y):
    folds = miltk.stratified_bag_folds(y, n_splits=10, random_state=1)
    predicted = cross_val_predict(estimator, bags, y, cv=folds)
    scores = cross_val_score(estimator, bags, y, cv=folds)
    return predicted, scores


CASES = [
    ("citation-knn", lambda: miltk.CitationKNN(), ["--classifier", "citation-knn"]),
    ("milr", lambda: miltk.MILR(), ["--classifier", "milr"]),
    ("mi-vlad", lambda: miltk.MiVLAD(n_clusters=2), ["--classifier", "mi-vlad", "--codebook", "2"]),
    ("mi-fv", lambda: miltk.MiFV(n_clusters=2), ["--classifier", "mi-fv", "--codebook", "2"]),
    ("mi-svm", lambda: miltk.MiSVM(), ["--classifier", "mi-svm"]),
    (
        "mi-graph-sqrt",
        lambda: miltk.MIGraph(norm="sqrt"),
        ["--classifier", "mi-graph", "--graph-norm", "sqrt"],
    ),
    (
        "mi-svm-bag",
        lambda: miltk.MISVM(kernel="rbf", gamma=0.01, C=10.0),
        ["--classifier", "mi-svm-bag", "--kernel", "rbf", "--gamma", "0.01", "--cost", "10"],
    ),
    (
        "mi-svm-minmax",
        lambda: miltk.MiSVM(scaling="minmax", C=10.0),
        ["--classifier", "mi-svm", "--scaling", "minmax", "--cost", "10"],
    ),
    (
        "bmida+citation-knn",
        lambda: Pipeline([("bmida", miltk.BMIDA(n_components=10)), ("knn", miltk.CitationKNN())]),
        ["--classifier", "citation-knn", "--projection", "bmida", "--dim", "10"],
    ),
    (
        "bmida+milr",
        lambda: Pipeline(
            [("bmida", miltk.BMIDA(n_components=10)), ("milr", miltk.MILR(pooling="mean", ridge=1.0))]
        ),
        ["--classifier", "milr", "--pooling", "mean", "--ridge", "1", "--projection", "bmida",
         "--dim", "10"],
    ),
]


@pytest.mark.parametrize("name,make,cli_args", CASES, ids=[c[0] for c in CASES])
def test_cross_validation_matches_mil_cv(musk1, name, make, cli_args):
    bags, y, ids = musk1
    predicted, fold_scores = python_cv(make(), bags, y)
    accuracy, by_id = reference_cv(make(), bags, y, ids, cli_args)
    assert len(by_id) == len(bags)
    for bag_id, label in zip(ids, predicted):
        assert str(label) == by_id[bag_id], f"bag {bag_id}"
    assert np.mean(predicted == y) == pytest.approx(accuracy, abs=1e-12)
    # The library's own loop agrees too, fold by fold.
    lib = miltk.cross_validate_native(make(), bags, y, cv=10, random_state=1)
    assert np.array_equal(lib["predictions"], predicted)
    assert np.allclose(lib["test_score"], fold_scores)
    assert lib["accuracy"] == pytest.approx(accuracy, abs=1e-12)


def test_folds_are_mil_cv_folds(musk1):
    bags, y, _ = musk1
    folds = miltk.stratified_bag_folds(y, n_splits=10, random_state=1)
    assert len(folds) == 10
    tests = np.concatenate([t for _, t in folds])
    assert sorted(tests) == list(range(len(y)))
    for train, test in folds:
        assert len(set(train) & set(test)) == 0 and len(train) + len(test) == len(y)
        # stratified: each fold's positives within one bag of the share
        assert abs(y[test].mean() - y.mean()) < 1.0 / len(test) + 1e-9
    again = miltk.stratified_bag_folds(list(y), n_splits=10, random_state=1)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again))
    other = miltk.stratified_bag_folds(y, n_splits=10, random_state=2)
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(folds, other))


def test_gram_matrix_matches_mil_gram(musk1, tmp_path):
    bags, _, _ = musk1
    ln = miltk.gram_matrix(bags, kernel="kand", epsilon=0.1, delta=0.01, random_state=1, log=True)
    assert ln.shape == (92, 92)
    assert np.array_equal(ln, ln.T)
    assert np.all(np.diag(ln) >= ln.max(axis=1) - 0.2)
    nsk = miltk.gram_matrix(bags, kernel="nsk", log=True)
    assert np.array_equal(nsk, nsk.T) and np.all(np.diag(nsk) == 0.0)
    k = miltk.gram_matrix(bags, kernel="nsk")
    assert np.allclose(k, np.exp(nsk)) and k.max() <= 1.0 + 1e-12
    out = tmp_path / "g.npy"
    if run_mil("gram", "musk1", "--kernel", "kand", "--seed", "1", "-o", str(out)) is not None:
        assert np.array_equal(np.load(out), ln)
        run_mil("gram", "musk1", "--kernel", "nsk", "-o", str(out))
        assert np.array_equal(np.load(out), nsk)


def test_m3ic_matches_mil_cluster(corel3):
    bags, y = corel3
    m3ic = miltk.M3IC(n_clusters=3, restarts=5, random_state=1)
    labels = m3ic.fit_predict(bags)
    acc = miltk.clustering_accuracy(y, labels)
    report = run_mil("cluster", "corel3", "--method", "m3ic", "--k", "3", "--seed", "1")
    if report is not None:
        assert list(labels) == report["assignments"]
        assert acc == pytest.approx(report["accuracy"], abs=1e-12)
    assert acc > 0.4
    for fmt in ("f32", "q15"):
        core = miltk.CoreModel(miltk.export(m3ic, fmt))
        assert core.kind == "m3ic"
        assert np.mean(core.predict(bags) == labels) >= 0.97
    bamic = miltk.BAMIC(n_clusters=3, distance="avg", random_state=1).fit(bags)
    with pytest.raises(ValueError, match="BAMIC"):
        miltk.export(bamic)
    report = run_mil("cluster", "corel3", "--method", "bamic-avg", "--k", "3", "--seed", "1")
    if report is not None:
        assert list(bamic.labels_) == report["assignments"]


def test_clustering_accuracy():
    assert miltk.clustering_accuracy([0, 0, 1, 1], [5, 5, 3, 3]) == 1.0
    assert miltk.clustering_accuracy(["a", "a", "b", "b"], [1, 0, 0, 0]) == 0.75


@pytest.mark.parametrize(
    "make",
    [
        lambda: miltk.MILR(pooling="mean", ridge=1.0),
        lambda: miltk.MILR(),
        lambda: miltk.CitationKNN(),
        lambda: Pipeline([("bmida", miltk.BMIDA(n_components=10)),
                          ("milr", miltk.MILR(pooling="mean", ridge=1.0))]),
        lambda: Pipeline([("bmida", miltk.BMIDA(n_components=10)), ("knn", miltk.CitationKNN())]),
    ],
    ids=["milr-mean", "milr-noisy-or", "citation-knn", "bmida+milr", "bmida+citation-knn"],
)
def test_export_core_labels_equal_predict(musk1, make):
    bags, y, _ = musk1
    model = make().fit(bags, y)
    expected = model.predict(bags)
    for fmt, least in (("f32", 1.0), ("q15", 0.97)):
        core = miltk.CoreModel.from_estimator(model, fmt)
        assert core.encoding == fmt and core.input_dim == 166
        agree = np.mean(core.predict(bags) == expected)
        assert agree >= least, f"{fmt}: core and host agree on {agree:.3f}"
    data = miltk.export(model, "q7")
    assert isinstance(data, bytes) and len(miltk.CoreModel(data)) == len(data)


def test_export_svm_and_refusals(musk1):
    bags, y, _ = musk1
    train = list(range(0, 92, 3))
    sub = [bags[i] for i in train]
    svm = miltk.SetKernelSVM(kernel="kand").fit(sub, y[train])
    core = miltk.CoreModel(miltk.export(svm, "f32"), classes=svm.classes_)
    assert core.kind == "set-kernel-svm"
    assert np.mean(core.predict(bags[:20]) == svm.predict(bags[:20])) >= 0.95
    nsk = miltk.SetKernelSVM(kernel="nsk").fit(sub, y[train])
    with pytest.raises((ValueError, RuntimeError)):
        miltk.export(nsk)
    with pytest.raises(ValueError, match="hausdorff"):
        miltk.export(miltk.CitationKNN(hausdorff="max").fit(sub, y[train]))
    with pytest.raises(ValueError, match="format"):
        miltk.export(miltk.MILR().fit(sub, y[train]), "f16")


def test_export_instance_methods(musk1):
    # Linear mi-SVM, MI-SVM, sMIL and sbMIL, MI-Wrapper, SimpleMI's mean summary and EM-DD
    # are scorers the core runs: every musk1 bag gets the estimator's label from the Q15
    # model. An RBF mi-SVM or sMIL, SimpleMI's bounding-box summaries and DD's noisy-OR
    # are refused, each naming the setting that exports.
    bags, y, _ = musk1
    for make, kind in (
        (miltk.MiSVM, "linear-mil"),
        (miltk.MISVM, "linear-mil"),
        (miltk.SMIL, "linear-mil"),
        (miltk.SBMIL, "linear-mil"),
        (miltk.MIWrapper, "linear-mil"),
        (miltk.SimpleMI, "linear-mil"),
        (miltk.EMDD, "miles"),
    ):
        model = make().fit(bags, y)
        core = miltk.CoreModel.from_estimator(model, "q15")
        assert core.kind == kind
        assert np.array_equal(core.predict(bags), model.predict(bags)), make.__name__
    # The linear ones also after a projection: the core projects, then scores.
    for make in (miltk.MiSVM, miltk.MIWrapper, miltk.SimpleMI):
        pipe = Pipeline([("bmida", miltk.BMIDA(n_components=10)), ("clf", make())]).fit(bags, y)
        core = miltk.CoreModel.from_estimator(pipe, "q15")
        assert np.array_equal(core.predict(bags), pipe.predict(bags)), make.__name__
    for model, fix in (
        (miltk.MiSVM(kernel="rbf"), "--kernel linear"),
        (miltk.SMIL(kernel="rbf"), "--kernel linear"),
        (miltk.SimpleMI(summary="minmax"), "--summary mean"),
        (miltk.DiverseDensity(), "em-dd"),
    ):
        with pytest.raises(ValueError, match=fix):
            miltk.export(model.fit(bags, y))


def test_export_codebook_methods(musk1):
    # miVLAD and miFV export as their own model kinds, and the Q15 model gives every
    # musk1 bag the estimator's label.
    bags, y, _ = musk1
    for make, kind in ((miltk.MiVLAD, "mi-vlad"), (miltk.MiFV, "mi-fv")):
        model = make().fit(bags, y)
        core = miltk.CoreModel.from_estimator(model, "q15")
        assert core.kind == kind
        assert np.array_equal(core.predict(bags), model.predict(bags)), make.__name__


def test_export_folded_projection(musk1):
    bags, y, _ = musk1
    pipe = Pipeline([("bmida", miltk.BMIDA(n_components=10)),
                     ("milr", miltk.MILR(pooling="mean", ridge=1.0))]).fit(bags, y)
    folded = miltk.export(pipe, "f32", fold_projection=True)
    assert len(folded) < len(miltk.export(pipe, "f32"))
    core = miltk.CoreModel(folded, classes=pipe.classes_)
    assert np.array_equal(core.predict(bags), pipe.predict(bags))
    with pytest.raises(ValueError, match="fold"):
        miltk.export(miltk.CitationKNN().fit(bags, y), fold_projection=True)


def test_export_integer_input_steps(musk1):
    # musk1's features are integers: input="integer" gives every feature step 1 (the
    # device's quantising is a copy), with the host's labels; real-valued training bags,
    # or an f32 model, are refused naming the parameter.
    bags, y, _ = musk1
    pipe = Pipeline([("bmida", miltk.BMIDA(n_components=10)),
                     ("milr", miltk.MILR(pooling="max"))]).fit(bags, y)
    data = miltk.export(pipe, "q15", input="integer")
    assert len(data) == len(miltk.export(pipe, "q15"))
    core = miltk.CoreModel(data, classes=pipe.classes_)
    assert np.array_equal(core.predict(bags), pipe.predict(bags))
    with pytest.raises(ValueError, match="input"):
        miltk.export(pipe, "f32", input="integer")
    with pytest.raises(ValueError, match="input"):
        miltk.export(pipe, "q15", input="ints")
    shifted = [b + 0.5 for b in bags]
    real = Pipeline([("bmida", miltk.BMIDA(n_components=10)),
                     ("milr", miltk.MILR(pooling="max"))]).fit(shifted, y)
    with pytest.raises(ValueError, match="not an integer"):
        miltk.export(real, "q15", input="integer")


def test_class_weights_match_mil_cv_on_corel_dogs():
    # 100 positive bags of 2,000: unweighted MILR (mean) predicts "rest" for nearly every
    # bag; balanced weights find the positives, from Python as from `mil cv`.
    from sklearn.metrics import balanced_accuracy_score

    bags, y, ids = miltk.load_corel_dogs(return_ids=True)
    folds = miltk.stratified_bag_folds(y, n_splits=10, random_state=1)
    results = {}
    for weight, flag in ((None, "none"), ("balanced", "balanced"), ({1: 19}, "1,19")):
        milr = miltk.MILR(pooling="mean", class_weight=weight)
        predicted = cross_val_predict(milr, bags, y, cv=folds)
        results[flag] = balanced_accuracy_score(y, predicted)
        report = run_mil(
            "cv", "corel_dogs", "--classifier", "milr", "--pooling", "mean",
            "--class-weight", flag, "--folds", "10", "--seed", "1",
        )
        if report is not None:
            by_id = {p["bag"]: p["label"] for p in report["predictions"]}
            assert [str(p) for p in predicted] == [by_id[i] for i in ids], flag
            assert results[flag] == pytest.approx(report["balanced_accuracy"], abs=1e-12)
    assert results["none"] < 0.55
    assert results["balanced"] >= 0.70
    assert results["1,19"] >= 0.70


def test_m3ic_size_bounds_match_mil_cluster(corel3):
    bags, _ = corel3
    cases = [
        (dict(max_size=float("inf")), ["--max-size", "inf"]),
        (dict(min_size=0.8, max_size=1.1), ["--min-size", "0.8", "--max-size", "1.1"]),
        (dict(balance_mode="paper"), ["--balance-mode", "paper"]),
    ]
    seen = []
    for params, flags in cases:
        labels = miltk.M3IC(n_clusters=3, random_state=2, **params).fit_predict(bags)
        seen.append(tuple(labels))
        report = run_mil("cluster", "corel3", "--method", "m3ic", "--k", "3", "--seed", "2", *flags)
        if report is not None:
            assert list(labels) == report["assignments"], flags
    # Each setting reaches the library: three different clusterings.
    assert len(set(seen)) == 3


def _weka_folds_and_mismo(name, ids):
    """Weka's 10 folds of `name` as (train, test) index arrays, and MISMO's predicted
    class per bag (`data/weka-folds/`, written by Weka 3.6.14 itself)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "data" / "weka-folds"
    position = {str(i): k for k, i in enumerate(ids)}
    rows = [line.split(",") for line in (root / f"folds_{name}_weka_seed1.csv").read_text().split()[1:]]
    fold_of = np.empty(len(ids), dtype=int)
    for bag, _, fold in rows:
        fold_of[position[bag]] = int(fold)
    folds = [(np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)) for f in range(10)]
    mismo = {}
    for line in (root / f"mismo_{name}_weka_seed1.csv").read_text().split()[1:]:
        bag, _, predicted, _ = line.split(",")
        mismo[bag] = int(predicted)
    return folds, mismo


@pytest.mark.parametrize("scaling", ["weka", "minmax", "auto"])
def test_mi_kernel_svm_gives_mismos_class_on_every_musk1_bag(musk1, scaling):
    # MISMO's setting from Python: the MI kernel, C = 1 per bag weighted by the mean bag
    # size; on musk1 plain min-max agrees with Weka's attribute skip on every bag too.
    bags, y, ids = musk1
    folds, mismo = _weka_folds_and_mismo("musk1", ids)
    svm = miltk.SetKernelSVM(kernel="mi-rbf", scaling=scaling)
    predicted = cross_val_predict(svm, bags, y, cv=folds)
    differ = [str(i) for i, p in zip(ids, predicted) if mismo[str(i)] != p]
    assert differ == []


def test_mi_kernel_svm_scaling_is_checked(musk1):
    bags, y, _ = musk1
    with pytest.raises(ValueError, match="scaling"):
        miltk.SetKernelSVM(kernel="kand", scaling="weka").fit(bags, y)
    with pytest.raises(ValueError, match="scaling"):
        miltk.SetKernelSVM(kernel="mi-rbf", scaling="zscore").fit(bags, y)
    projected = Pipeline(
        [("pca", miltk.PCA(n_components=5)), ("svm", miltk.SetKernelSVM(kernel="mi-rbf", scaling="weka"))]
    )
    with pytest.raises(ValueError, match="projection"):
        projected.fit(bags, y)


def test_a_scaled_mi_kernel_gamma_is_one_over_the_summed_variance(musk1):
    # gamma="scaled" is 1 / sum_j Var(x_j) of the training instances after the min-max
    # map, computed here with numpy.
    bags, y, _ = musk1
    x = np.vstack([np.asarray(b, dtype=float) for b in bags])
    span = x.max(axis=0) - x.min(axis=0)
    kept = span > 0
    scaled_x = (x[:, kept] - x.min(axis=0)[kept]) / span[kept]
    gamma = 1.0 / scaled_x.var(axis=0).sum()
    scaled = miltk.SetKernelSVM(kernel="mi-rbf", gamma="scaled").fit(bags, y)
    fixed = miltk.SetKernelSVM(kernel="mi-rbf", gamma=gamma).fit(bags, y)
    np.testing.assert_allclose(
        scaled.decision_function(bags), fixed.decision_function(bags), rtol=1e-9, atol=1e-12
    )
    assert (scaled.predict(bags) == fixed.predict(bags)).all()
    # In a parameter grid beside a number, chosen by the inner CV.
    grid = {"gamma": [0.01, "scaled"]}
    auto = miltk.AutoMIL(candidates=[(miltk.SetKernelSVM(kernel="mi-rbf"), grid)])
    assert auto.fit(bags, y).predict(bags).shape == (len(bags),)
    with pytest.raises(ValueError, match="gamma"):
        miltk.SetKernelSVM(kernel="nsk", gamma="scaled").fit(bags, y)
    with pytest.raises(ValueError, match="gamma"):
        miltk.SetKernelSVM(kernel="mi-rbf", gamma="wide").fit(bags, y)


@pytest.mark.parametrize("make", [miltk.SMIL, miltk.SBMIL], ids=["SMIL", "SBMIL"])
def test_smil_bias_shifts_every_score_by_one_constant(musk1, make):
    # The two biases share the fit's supports and coefficients: every bag's decision value
    # moves by the same amount. The default puts 0 at the training bags' cut of best
    # balanced accuracy, which a brute force over every cut between two scores confirms.
    from sklearn.metrics import balanced_accuracy_score

    bags, y, _ = musk1
    cut = make().fit(bags, y)
    mean = make(bias="support-mean").fit(bags, y)
    shift = cut.decision_function(bags) - mean.decision_function(bags)
    assert np.ptp(shift) < 1e-9 and abs(shift[0]) > 1e-6
    scores = np.sort(np.unique(mean.decision_function(bags)))
    cuts = np.concatenate([[scores[0] - 1.0], (scores[:-1] + scores[1:]) / 2])
    positive = y == cut.classes_[1]
    best = max(balanced_accuracy_score(positive, mean.decision_function(bags) > c)
               for c in cuts)
    assert balanced_accuracy_score(positive, cut.predict(bags) == cut.classes_[1]) == best
    with pytest.raises(ValueError, match="bias"):
        make(bias="zero").fit(bags, y)
