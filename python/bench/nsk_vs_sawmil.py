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


def run_sawmil(bags, y, folds, C=1.0, scale_C=True):
    from sawmil.kernels import RBF
    from sawmil.nsk import NSK

    predicted = np.empty_like(y)
    for train, test in folds:
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


def timed(f, *args, **kwargs):
    cpu, wall = time.process_time(), time.perf_counter()
    out = f(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main():
    rows = []
    for name in ("musk1", "elephant"):
        bags, y = miltk.load_dataset(name)
        folds = miltk.stratified_bag_folds(y, n_splits=10, seed=1)
        runs = [
            ("miltk NSK (rho=0.02, C=1e10)", lambda: run_miltk(bags, y, folds)),
            ("miltk NSK (rho=1, C=1)", lambda: run_miltk(bags, y, folds, rho=1.0, C=1.0)),
            ("miltk NSK (rho=1, C=100)", lambda: run_miltk(bags, y, folds, rho=1.0, C=100.0)),
            ("sawmil NSK average (C=1/n)", lambda: run_sawmil(bags, y, folds)),
            ("sawmil NSK average (C=100)",
             lambda: run_sawmil(bags, y, folds, C=100.0, scale_C=False)),
        ]
        for label, run in runs:
            predicted, cpu, wall = timed(run)
            rows.append((name, label, np.mean(predicted == y), cpu, wall))
            print(f"{name:9} {label:32} accuracy {rows[-1][2]:.4f}  CPU {cpu:7.2f} s  "
                  f"wall {wall:7.2f} s", flush=True)
    print()
    print("| data | implementation | accuracy | CPU s | wall s |")
    print("|---|---|---|---|---|")
    for name, label, acc, cpu, wall in rows:
        print(f"| {name} | {label} | {acc:.3f} | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
