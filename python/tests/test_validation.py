"""Bad input raises ValueError/TypeError naming the bag, instance and feature."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import miltk


def toy(n_bags=12, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    bags = [rng.normal(size=(rng.integers(1, 5), dim)) + (b % 2) for b in range(n_bags)]
    y = np.array([b % 2 for b in range(n_bags)])
    return bags, y


def test_nan_names_bag_instance_and_feature():
    bags, y = toy()
    bags[3] = bags[3].copy()
    bags[3][-1, 2] = np.nan
    with pytest.raises(ValueError, match=r"X\[3\] instance \d+ feature 2 is nan"):
        miltk.CitationKNN().fit(bags, y)
    bags[3][-1, 2] = np.inf
    with pytest.raises(ValueError, match=r"X\[3\] .* feature 2 is inf"):
        miltk.MILR().fit(bags, y)


def test_wrong_number_of_features():
    bags, y = toy()
    bad = list(bags)
    bad[5] = np.zeros((2, 4))
    with pytest.raises(ValueError, match=r"X\[5\] has 4 features but X\[0\] has 3"):
        miltk.CitationKNN().fit(bad, y)
    clf = miltk.CitationKNN().fit(bags, y)
    with pytest.raises(ValueError, match=r"X\[1\] has 2 features but the fitted model expects 3"):
        clf.predict([bags[0], np.zeros((1, 2))])


def test_empty_bag_and_one_d_bag():
    bags, y = toy()
    bad = list(bags)
    bad[2] = np.zeros((0, 3))
    with pytest.raises(ValueError, match=r"X\[2\] is empty"):
        miltk.MILR().fit(bad, y)
    bad[2] = np.zeros(3)
    with pytest.raises(ValueError, match=r"X\[2\] is 1-D"):
        miltk.MILR().fit(bad, y)
    with pytest.raises(ValueError, match="no bags"):
        miltk.MILR().fit([], [])


def test_types():
    bags, y = toy()
    with pytest.raises(TypeError, match="sequence of 2-D arrays"):
        miltk.CitationKNN().fit(5, y)
    bad = list(bags)
    bad[1] = np.array([["a", "b", "c"]])
    with pytest.raises(TypeError, match=r"X\[1\] has dtype"):
        miltk.CitationKNN().fit(bad, y)
    with pytest.raises(ValueError, match="one 2-D array"):
        miltk.CitationKNN().fit(np.zeros((12, 3)), y)


def test_labels():
    bags, y = toy()
    with pytest.raises(ValueError, match="11 labels for 12 bags"):
        miltk.CitationKNN().fit(bags, y[:-1])
    with pytest.raises(ValueError, match="one class"):
        miltk.CitationKNN().fit(bags, np.ones(12))
    with pytest.raises(ValueError, match="1-D"):
        miltk.CitationKNN().fit(bags, np.ones((12, 2)))
    # A continuous target is refused, naming the first value that is not a class;
    # float labels that are whole numbers are classes.
    with pytest.raises(ValueError, match=r"y\[0\] is 0.5: labels are classes"):
        miltk.CitationKNN().fit(bags, np.linspace(0.5, 3.2, 12))
    miltk.CitationKNN().fit(bags, np.asarray(y, dtype=float))


def test_parameters_are_checked_with_their_names():
    bags, y = toy()
    with pytest.raises(ValueError, match="pooling=.*'noisy-or'"):
        miltk.MILR(pooling="bogus").fit(bags, y)
    with pytest.raises(ValueError, match="scaling"):
        miltk.CitationKNN(scaling="minmax").fit(bags, y)
    with pytest.raises(ValueError, match="references"):
        miltk.CitationKNN(references=0).fit(bags, y)
    with pytest.raises(ValueError, match="citers"):
        miltk.CitationKNN(citers=50).fit(bags, y)
    with pytest.raises(ValueError, match="epsilon"):
        miltk.SetKernelSVM(epsilon=2.0).fit(bags, y)
    with pytest.raises(ValueError, match="n_components = 7"):
        miltk.BMIDA(n_components=7).fit(bags, y)
    with pytest.raises(ValueError, match="alpha"):
        miltk.MIALM(n_components=2, alpha=-1.0).fit(bags, y)
    with pytest.raises(ValueError, match="n_clusters = 40"):
        miltk.M3IC(n_clusters=40).fit(bags)
    with pytest.raises(ValueError, match="distance"):
        miltk.BAMIC(distance="mean").fit(bags)
    with pytest.raises(ValueError, match="class_weight='heavy'"):
        miltk.MILR(class_weight="heavy").fit(bags, y)
    with pytest.raises(ValueError, match="class_weight names"):
        miltk.CitationKNN(class_weight={7: 2.0}).fit(bags, y)
    with pytest.raises(ValueError, match="class_weight"):
        miltk.SetKernelSVM(class_weight={0: -1.0}).fit(bags, y)
    with pytest.raises(TypeError, match="class_weight"):
        miltk.MILR(class_weight=[1, 2]).fit(bags, y)
    with pytest.raises(ValueError, match="min_size"):
        miltk.M3IC(n_clusters=2, min_size=1.5).fit(bags)
    with pytest.raises(ValueError, match="max_size"):
        miltk.M3IC(n_clusters=2, max_size=0.5).fit(bags)
    with pytest.raises(ValueError, match="balance_mode"):
        miltk.M3IC(n_clusters=2, balance_mode="even").fit(bags)


def test_svm_handles_more_than_two_classes():
    # One-vs-rest over one Gram matrix: every prediction is one of the three labels.
    bags, _ = toy(n_bags=12)
    y = np.arange(12) % 3
    svm = miltk.SetKernelSVM(kernel="nsk").fit(bags, y)
    assert set(svm.predict(bags)) <= {0, 1, 2}
    assert svm.decision_function(bags).shape == (12, 3)


def test_not_fitted():
    bags, _ = toy()
    with pytest.raises(NotFittedError):
        miltk.CitationKNN().predict(bags)
    with pytest.raises(NotFittedError):
        miltk.BMIDA().transform(bags)


def test_float32_noncontiguous_and_int_input_agree():
    bags, y = toy(dim=4)
    clf = miltk.MILR(pooling="mean", ridge=1.0).fit(bags, y)
    expected = clf.predict_proba(bags)
    f32 = [b.astype(np.float32).astype(np.float64) for b in bags]
    assert np.array_equal(clf.predict_proba([b.astype(np.float32) for b in bags]),
                          clf.predict_proba(f32))
    # Non-contiguous views: every second column of a wider array, and transposed copies.
    wide = [np.repeat(b, 2, axis=1)[:, ::2] for b in bags]
    assert not wide[0].flags.c_contiguous
    assert np.array_equal(clf.predict_proba(wide), expected)
    fortran = [np.asfortranarray(b) for b in bags]
    assert np.array_equal(clf.predict_proba(fortran), expected)
    # Fortran order reaching the native layer directly is read in logical order too.
    x, starts = miltk.check_bags(bags)
    from miltk import _native
    native = _native.Bags(np.asfortranarray(x), starts)
    assert np.array_equal(clf.model_.scores(native)[0], expected)
    ints = [np.round(b).astype(np.int32) for b in bags]
    assert clf.predict(ints).shape == (12,)


def test_bags_from_instances():
    X = np.arange(12.0).reshape(6, 2)
    ids = np.array([7, 3, 7, 9, 3, 7])
    bags, order = miltk.bags_from_instances(X, ids)
    assert list(order) == [7, 3, 9]
    assert np.array_equal(bags[0], X[[0, 2, 5]])
    assert np.array_equal(bags[1], X[[1, 4]])
    assert np.array_equal(bags[2], X[[3]])
    with pytest.raises(ValueError, match="one id per row"):
        miltk.bags_from_instances(X, ids[:-1])


def test_core_model_rejects_garbage():
    with pytest.raises(ValueError, match="not a valid compact model"):
        miltk.CoreModel(b"not a model at all")


@pytest.mark.parametrize(
    "projection",
    [miltk.PCA, miltk.LDA, miltk.LFDA, miltk.CLFDA, miltk.BMIDA, miltk.MMIDA, miltk.MIALM, miltk.MIDR],
)
def test_every_projection_refuses_more_components_than_features(projection):
    bags, y = toy()
    n_features = bags[0].shape[1]
    with pytest.raises(ValueError, match=f"n_components = {n_features + 1}"):
        projection(n_components=n_features + 1).fit(bags, y)


@pytest.mark.parametrize("clustering", [miltk.M3IC, miltk.BAMIC])
def test_every_clustering_refuses_more_clusters_than_bags(clustering):
    bags, _ = toy()
    with pytest.raises(ValueError, match=f"n_clusters = {len(bags) + 1}"):
        clustering(n_clusters=len(bags) + 1).fit(bags)


def test_work_over_the_memory_limit_raises_memory_error_before_it_starts():
    # 100,000 bags of ten instances: Citation-kNN's bag distances alone need about
    # 149 GiB. Refused at once, and the interpreter goes on.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1_000_000, 2))
    bags = [x[i : i + 10] for i in range(0, len(x), 10)]
    y = np.arange(len(bags)) % 2
    miltk.set_max_memory_gib(8)
    try:
        assert miltk.get_max_memory_gib() == 8
        with pytest.raises(MemoryError, match=r"Citation-kNN over 100000 bags .*GiB"):
            miltk.CitationKNN().fit(bags, y)
        with pytest.raises(MemoryError, match="BAMIC over 100000 bags"):
            miltk.BAMIC().fit(bags)
        with pytest.raises(MemoryError, match="Gram matrix over 100000 bags"):
            miltk.gram_matrix(bags, kernel="nsk")
        with pytest.raises(MemoryError, match="SVM over 100000 bags"):
            miltk.cross_validate_native(miltk.SetKernelSVM(kernel="nsk"), bags, y, cv=2)
        # A limit below musk1's needs refuses work that fits by default.
        musk_bags, musk_y = miltk.load_musk1(return_X_y=True)
        miltk.set_max_memory_gib(1e-6)
        with pytest.raises(MemoryError, match="set_max_memory_gib"):
            miltk.SetKernelSVM().fit(musk_bags, musk_y)
        with pytest.raises(MemoryError, match="scatter matrices"):
            miltk.PCA(n_components=2).fit(musk_bags)
        with pytest.raises(MemoryError, match="M³IC"):
            miltk.M3IC().fit(musk_bags)
    finally:
        miltk.set_max_memory_gib(None)
    assert miltk.get_max_memory_gib() > 0
    assert miltk.CitationKNN().fit(musk_bags, musk_y).score(musk_bags, musk_y) > 0.5
    for bad in (0, -1.0, float("nan"), float("inf"), "8"):
        with pytest.raises(ValueError, match="gib"):
            miltk.set_max_memory_gib(bad)  # type: ignore[arg-type]


def test_a_gram_matrix_that_is_the_identity_warns_with_its_remedy():
    # 700 features: box counts of different bags differ by hundreds of orders of
    # magnitude, and at rho = 1/50 the normalised kernel is the identity.
    rng = np.random.default_rng(7)
    bags = [rng.normal(size=(3 + b % 4, 700)) for b in range(20)]
    y = np.array([b % 2 for b in range(20)])
    with pytest.warns(RuntimeWarning, match="numerically the identity.*use rho"):
        miltk.SetKernelSVM(kernel="kand", rho=0.02).fit(bags, y)
    # The default rho, scaled to the training bags, keeps the kernel informative.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = miltk.SetKernelSVM(kernel="kand").fit(bags, y)
    assert len(set(model.predict(bags))) == 2
    for bad in ("scale", -1.0, 2.0):
        with pytest.raises(ValueError, match="rho"):
            miltk.SetKernelSVM(kernel="kand", rho=bad).fit(bags, y)
    # A spread of similarities says nothing.
    small = [b[:, :2] for b in bags]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        miltk.SetKernelSVM(kernel="kand").fit(small, y)
