"""Parallel use: joblib process and thread workers, and the threads of native calls."""

import subprocess
import sys

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

import miltk


def test_joblib_threads_and_processes_agree(musk1):
    bags, y, _ = musk1
    folds = miltk.stratified_bag_folds(y, n_splits=5, random_state=3)
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


def test_set_num_threads_after_parallel_work_in_a_fresh_process():
    # Every native call builds its own pool: the count may change after parallel work,
    # and n_jobs overrides it per estimator.
    code = (
        "import miltk\n"
        "bags, y = miltk.load_musk1(return_X_y=True)\n"
        "a = miltk.CitationKNN().fit(bags, y).predict_proba(bags)\n"
        "miltk.set_num_threads(1)\n"
        "assert miltk.get_num_threads() == 1\n"
        "b = miltk.CitationKNN().fit(bags, y).predict_proba(bags)\n"
        "miltk.set_num_threads(2)\n"
        "assert miltk.get_num_threads() == 2\n"
        "c = miltk.CitationKNN(n_jobs=1).fit(bags, y).predict_proba(bags)\n"
        "assert (a == b).all() and (b == c).all()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_n_jobs_under_joblib_processes(musk1):
    bags, y, _ = musk1
    folds = miltk.stratified_bag_folds(y, n_splits=4, random_state=2)
    serial = cross_val_score(miltk.MILR(pooling="mean", ridge=1.0, n_jobs=1), bags, y, cv=folds)
    both = cross_val_score(
        miltk.MILR(pooling="mean", ridge=1.0, n_jobs=1), bags, y, cv=folds, n_jobs=2
    )
    assert np.array_equal(serial, both)


# Long native calls, each a minute or more of work on musk2, interrupted two seconds in.
LONG_CALLS = {
    "gram_matrix": 'miltk.gram_matrix(bags, kernel="kand", epsilon=0.01, delta=1e-12)',
    "SetKernelSVM.fit": 'miltk.SetKernelSVM(kernel="kand", epsilon=0.01, delta=1e-12).fit(bags, y)',
    "cross_validate_native": (
        'miltk.cross_validate_native(miltk.MILR(optimizer="weka"), bags, y, '
        "cv=miltk.StratifiedBagKFold(10, n_repeats=50, shuffle=True, random_state=1))"
    ),
}


@pytest.mark.parametrize("call", sorted(LONG_CALLS))
def test_ctrl_c_returns_control_within_a_second_and_stops_the_work(call):
    code = (
        "import os, signal, threading, time\n"
        # A child of a background job starts with SIGINT ignored, and Python then installs
        # no handler: give it Python's own, as a terminal gives it.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import miltk\n"
        "bags, y = miltk.load_musk2(return_X_y=True)\n"
        "sent = []\n"
        "def interrupt():\n"
        "    time.sleep(2)\n"
        "    sent.append(time.monotonic())\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "try:\n"
        f"    {LONG_CALLS[call]}\n"
        "    print('finished')\n"
        "except KeyboardInterrupt:\n"
        "    print(f'interrupted after {time.monotonic() - sent[0]:.3f} s')\n"
        # The abandoned work stops at its next checkpoint: half a second on, the process
        # burns no more CPU (without the stop, every worker thread would keep computing).
        "    time.sleep(0.5)\n"
        "    cpu, wall = time.process_time(), time.monotonic()\n"
        "    time.sleep(1.5)\n"
        "    print(f'then {time.process_time() - cpu:.3f} CPU s in {time.monotonic() - wall:.3f} s')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[:2] == ["interrupted", "after"], out.stdout
    assert float(words[2]) < 1.0, out.stdout
    assert words[4] == "then", out.stdout
    assert float(words[5]) < 0.1, out.stdout

