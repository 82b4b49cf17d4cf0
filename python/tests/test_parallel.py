"""Parallel use: joblib process and thread workers, and sizing rayon's pool."""

import subprocess
import sys

import numpy as np
from joblib import parallel_config
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

import miltk


def test_joblib_threads_and_processes_agree(musk1):
    bags, y, _ = musk1
    folds = miltk.stratified_bag_folds(y, n_splits=5, seed=3)
    serial = cross_val_score(miltk.CitationKNN(), bags, y, cv=folds)
    processes = cross_val_score(miltk.CitationKNN(), bags, y, cv=folds, n_jobs=2)
    assert np.array_equal(serial, processes)
    pipe = Pipeline([("p", miltk.BMIDA()), ("c", miltk.MILR(pooling="mean", ridge=1.0))])
    grid = {"p__n_components": [3, 6]}
    one = GridSearchCV(pipe, grid, cv=folds).fit(bags, y)
    with parallel_config(backend="threading", n_jobs=2):
        two = GridSearchCV(pipe, grid, cv=folds).fit(bags, y)
    assert one.best_params_ == two.best_params_
    assert np.array_equal(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])


def test_set_num_threads_in_a_fresh_process():
    code = (
        "import miltk\n"
        "miltk.set_num_threads(1)\n"
        "assert miltk.get_num_threads() == 1\n"
        "try:\n"
        "    miltk.set_num_threads(2)\n"
        "except RuntimeError as e:\n"
        "    assert 'already running with 1 threads' in str(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
