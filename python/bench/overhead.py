"""Python-call overhead: scikit-learn's cross_val_score over miltk.CitationKNN against
the library's own cross-validation loop (what `mil cv` runs) on musk1, 10 folds, in
the same process. Best of N runs each, wall and CPU time; set RAYON_NUM_THREADS to fix the thread count.

Usage: RAYON_NUM_THREADS=1 python bench/overhead.py [N]
"""

import sys
import time

import numpy as np
from sklearn.model_selection import cross_val_score

import miltk


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
    bags, y = miltk.load_musk1()
    folds = miltk.stratified_bag_folds(y, n_splits=10, seed=1)
    rust = best(lambda: miltk.library_cross_validate(miltk.CitationKNN(), bags, y), n)
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
    print(f"threads {miltk.get_num_threads()}, best of {n}: wall ms, CPU ms, overhead (wall, CPU)")
    for label, t in (
        ("library CV loop (Rust)        ", rust),
        ("fit/predict loop (Python)     ", manual),
        ("cross_val_score (scikit-learn)", python),
    ):
        print(f"{label} {t[0]*1e3:8.1f} {t[1]*1e3:8.1f}   "
              f"{100*(t[0]/rust[0]-1):+6.1f}% {100*(t[1]/rust[1]-1):+6.1f}%")


if __name__ == "__main__":
    main()
