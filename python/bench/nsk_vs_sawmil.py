"""NSK SVM, 10-fold cross-validation on musk1 and elephant: miltk vs sawmil 0.2.1.

Both run on the same stratified bag folds (those of ``mil cv --folds 10 --seed 1``) and
the same instance kernel, exp(-gamma ||x - y||^2) on features z-scored with the training
fold's instances, gamma = 1 / (number of non-constant features). They differ in the set
kernel's normalisation and in the SVM:

- miltk ``SetKernelSVM(kernel="nsk")``: Gärtner et al.'s normalisation
  k(X,Y) / sqrt(k(X,X) k(Y,Y)) in log space, then (library defaults) k ** 0.02 and a hard
  margin C = 1e10 solved by SMO; also shown with rho = 1 and C = 1 or C = 100 (the
  latter sawmil's C = 100 row's setting).
- sawmil ``NSK(normalizer="average")``: k(X,Y) / (|X| |Y|), solved as a QP by OSQP,
  with its default C = 1 (scaled by 1/n, ``scale_C=True``) and with C = 100 unscaled.

Two routes through miltk are timed:

- per fold, the scikit-learn way: a fresh estimator fitted on each training fold, which
  z-scores with that fold's instances and so computes that fold's Gram matrix;
- ``miltk.cross_validate_native`` (what ``mil cv`` runs): the features z-scored once over
  all bags (no labels involved) and one Gram matrix shared by the folds. sawmil is then
  run on the same once-z-scored features (its API fits a fold at a time, so it still
  computes a Gram matrix per fold): the same data and folds for both.

Usage: python bench/nsk_vs_sawmil.py  (needs ``pip install sawmil==0.2.1 osqp``).
Prints accuracy (pooled over the folds), CPU seconds (process time, all threads) and
wall seconds of each.
"""

import time

import numpy as np

import miltk


def zscore(train, test):
    inst = np.concatenate(train)
    mean, std = inst.mean(axis=0), inst.std(axis=0)
    active = std > 0
    std = np.where(active, std, 1.0)

    def scale(bags):
        return [np.where(active, (b - mean) / std, 0.0) for b in bags]

    return scale(train), scale(test), int(active.sum())


def run_miltk(bags, y, folds, **params):
    predicted = np.empty_like(y)
    for train, test in folds:
        clf = miltk.SetKernelSVM(kernel="nsk", **params)
        clf.fit([bags[i] for i in train], y[train])
        predicted[test] = clf.predict([bags[i] for i in test])
    return predicted


def run_library(bags, y, n_splits, seed, **params):
    clf = miltk.SetKernelSVM(kernel="nsk", **params)
    out = miltk.cross_validate_native(clf, bags, y, cv=n_splits, random_state=seed)
    return out["predictions"]


def run_sawmil(bags, y, folds, C=1.0, scale_C=True, once=False):
    from sawmil.kernels import RBF
    from sawmil.nsk import NSK

    predicted = np.empty_like(y)
    if once:
        bags, _, active = zscore(bags, [])
    for train, test in folds:
        if once:
            tr, te = [bags[i] for i in train], [bags[i] for i in test]
        else:
            tr, te, active = zscore([bags[i] for i in train], [bags[i] for i in test])
        clf = NSK(
            C=C,
            kernel=RBF(gamma=1.0 / active),
            normalizer="average",
            solver="osqp",
            scale_C=scale_C,
        )
        clf.fit(tr, y[train].astype(float))
        predicted[test] = clf.predict(te)
    return predicted


def timed(f, repeats):
    """The run's output and its median CPU and wall seconds over `repeats` runs."""
    cpus, walls, out = [], [], None
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        predicted = f()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
        assert out is None or np.array_equal(out, predicted), "runs disagree"
        out = predicted
    return out, float(np.median(cpus)), float(np.median(walls))


def main(repeats=3):
    rows = []
    for name in ("musk1", "elephant"):
        bags, y = miltk.load_dataset(name, return_X_y=True)
        folds = miltk.stratified_bag_folds(y, n_splits=10, random_state=1)
        # (label, z-scoring, run); the speed-up column divides sawmil's C = 100 time
        # under the same z-scoring by the row's.
        runs = [
            ("miltk NSK (rho=0.02, C=1e10)", "per fold", lambda: run_miltk(bags, y, folds)),
            ("miltk NSK (rho=1, C=1)", "per fold",
             lambda: run_miltk(bags, y, folds, rho=1.0, C=1.0)),
            ("miltk NSK (rho=1, C=100)", "per fold",
             lambda: run_miltk(bags, y, folds, rho=1.0, C=100.0)),
            ("sawmil NSK average (C=1/n)", "per fold", lambda: run_sawmil(bags, y, folds)),
            ("sawmil NSK average (C=100)", "per fold",
             lambda: run_sawmil(bags, y, folds, C=100.0, scale_C=False)),
            ("miltk cross_validate_native (rho=1, C=1)", "once",
             lambda: run_library(bags, y, 10, 1, rho=1.0, C=1.0)),
            ("miltk cross_validate_native (rho=1, C=100)", "once",
             lambda: run_library(bags, y, 10, 1, rho=1.0, C=100.0)),
            ("sawmil NSK average (C=100)", "once",
             lambda: run_sawmil(bags, y, folds, C=100.0, scale_C=False, once=True)),
        ]
        measured = []
        for label, zscoring, run in runs:
            predicted, cpu, wall = timed(run, repeats)
            measured.append((label, zscoring, np.mean(predicted == y), cpu, wall))
            print(f"{name:9} {label:44} z-scored {zscoring:8} accuracy "
                  f"{measured[-1][2]:.4f}  CPU {cpu:7.3f} s  wall {wall:7.3f} s", flush=True)
        sawmil = {z: cpu for label, z, _, cpu, _ in measured if label.endswith("(C=100)")
                  and label.startswith("sawmil")}
        for label, zscoring, acc, cpu, wall in measured:
            ratio = "" if label.startswith("sawmil") else f"{sawmil[zscoring] / cpu:.1f}×"
            rows.append((name, label, zscoring, acc, cpu, wall, ratio))
    print()
    print("| data | implementation | z-scored | accuracy | CPU s | wall s | sawmil C=100 CPU ÷ this |")
    print("|---|---|---|---|---|---|---|")
    for name, label, zscoring, acc, cpu, wall, ratio in rows:
        print(f"| {name} | {label} | {zscoring} | {acc:.3f} | {cpu:.3f} | {wall:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
