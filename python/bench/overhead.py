"""Python-call overhead: scikit-learn's cross_val_score over miltk.CitationKNN against
the library's own cross-validation loop (what `mil cv` runs) on musk1, 10 folds, in
the same process, and against the `mil cv` program itself when MIL_BIN names it. Also
scikit-learn's cross_val_score machinery alone (an estimator that does nothing), the
floor of any estimator's overhead. Best of N runs each, wall and CPU time; set
RAYON_NUM_THREADS to fix the thread count.

Usage: RAYON_NUM_THREADS=1 MIL_BIN=target/release/mil python bench/overhead.py [N]
"""

import os
import subprocess
import sys
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import cross_val_score

import miltk


class DoNothing(ClassifierMixin, BaseEstimator):
    """Predicts the first training label: scikit-learn's per-fold cost alone."""

    def fit(self, X, y):
        self.label_ = y[0]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


def best(f, n):
    """(best wall, best CPU) seconds of n runs; CPU is process time over all threads."""
    wall, cpu = [], []
    for _ in range(n):
        w, c = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    bags, y = miltk.load_musk1(return_X_y=True)
    folds = miltk.stratified_bag_folds(y, n_splits=10, random_state=1)
    rust = best(lambda: miltk.cross_validate_native(miltk.CitationKNN(), bags, y), n)
    python = best(lambda: cross_val_score(miltk.CitationKNN(), bags, y, cv=folds), n)
    manual = best(
        lambda: [
            miltk.CitationKNN()
            .fit([bags[i] for i in tr], y[tr])
            .predict([bags[i] for i in te])
            for tr, te in folds
        ],
        n,
    )
    sklearn_alone = best(lambda: cross_val_score(DoNothing(), bags, y, cv=folds), n)
    rows = [
        ("library CV loop (Rust)        ", rust),
        ("fit/predict loop (Python)     ", manual),
        ("cross_val_score (scikit-learn)", python),
        ("cross_val_score, no estimator ", sklearn_alone),
    ]
    binary = os.environ.get("MIL_BIN")
    if binary:
        def program():
            # The program's CPU time is its child-process time.
            before = os.times()
            subprocess.run(
                [binary, "cv", "musk1", "--classifier", "citation-knn", "--folds", "10",
                 "--seed", "1", "--quiet", "--json"],
                stdout=subprocess.DEVNULL, check=True,
            )
            after = os.times()
            return (after.children_user + after.children_system
                    - before.children_user - before.children_system)

        wall, cpu = [], []
        for _ in range(n):
            w = time.perf_counter()
            cpu.append(program())
            wall.append(time.perf_counter() - w)
        rows.append(("`mil cv` program (MIL_BIN)    ", (min(wall), min(cpu))))
    print(f"threads {miltk.get_num_threads()}, best of {n}: wall ms, CPU ms, "
          "over the library loop (wall, CPU)")
    for label, t in rows:
        if t is sklearn_alone:
            # Not an alternative run but a part of cross_val_score's: its share.
            share = f"{100*t[0]/rust[0]:5.1f}% of the loop"
        else:
            share = f"{100*(t[0]/rust[0]-1):+6.1f}% {100*(t[1]/rust[1]-1):+6.1f}%"
        print(f"{label} {t[0]*1e3:8.1f} {t[1]*1e3:8.1f}   {share}")


if __name__ == "__main__":
    main()
