"""Python-call overhead: scikit-learn's cross_val_score over miltk.CitationKNN against
the library's own cross-validation loop (what `mil cv` runs) on musk1, 10 folds, in
the same process. Best of N runs each; set RAYON_NUM_THREADS to fix the thread count.

Usage: RAYON_NUM_THREADS=1 python bench/overhead.py [N]
"""

import sys
import time

import numpy as np
from sklearn.model_selection import cross_val_score

import miltk


def best(f, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


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
    print(f"threads {miltk.get_num_threads()}, best/median of {n}")
    print(f"library CV loop (Rust)         {rust[0]*1e3:8.1f} ms  {rust[1]*1e3:8.1f} ms")
    print(f"fit/predict loop (Python)      {manual[0]*1e3:8.1f} ms  {manual[1]*1e3:8.1f} ms"
          f"  overhead {100*(manual[0]/rust[0]-1):+.1f}%")
    print(f"cross_val_score (scikit-learn) {python[0]*1e3:8.1f} ms  {python[1]*1e3:8.1f} ms"
          f"  overhead {100*(python[0]/rust[0]-1):+.1f}%")


if __name__ == "__main__":
    main()
