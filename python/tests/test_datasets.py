"""The shipped data set loaders: the documented counts (host/data/PROVENANCE.md), and
the arrays equal to the shipped CSV files read here with the csv module."""

import csv

import numpy as np
import pytest

import miltk
from conftest import REPO

# name: (loader, bags, positive bags (or bags per class), instances, features)
DOCUMENTED = {
    "musk1": (miltk.load_musk1, 92, {1: 47, 0: 45}, 476, 166),
    "musk2": (miltk.load_musk2, 102, {1: 39, 0: 63}, 6598, 166),
    "elephant": (miltk.load_elephant, 200, {1: 100, 0: 100}, 1391, 230),
    "fox": (miltk.load_fox, 200, {1: 100, 0: 100}, 1320, 230),
    "tiger": (miltk.load_tiger, 200, {1: 100, 0: 100}, 1220, 230),
    "corel3": (miltk.load_corel3, 300, {0: 100, 1: 100, 2: 100}, 1953, 230),
    "sival6": (miltk.load_sival6, 360, {c: 60 for c in range(6)}, 11410, 30),
    "corel_dogs": (miltk.load_corel_dogs, 2000, {1: 100, 0: 1900}, 7947, 9),
}


@pytest.mark.parametrize("name", DOCUMENTED)
def test_loader_gives_the_documented_counts(name):
    loader, n_bags, per_class, instances, features = DOCUMENTED[name]
    bags, y = loader(return_X_y=True)
    assert len(bags) == len(y) == n_bags
    assert dict(zip(*np.unique(y, return_counts=True))) == per_class
    assert sum(len(b) for b in bags) == instances
    assert {b.shape[1] for b in bags} == {features}
    # load_dataset by name is the same data.
    by_name, y_by_name = miltk.load_dataset(name, return_X_y=True)
    assert np.array_equal(y, y_by_name)
    assert all(np.array_equal(a, b) for a, b in zip(bags, by_name))


@pytest.mark.parametrize("name", ["fox", "tiger"])
def test_loader_equals_the_shipped_file(name):
    with open(REPO / "host" / "data" / f"{name}.csv", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    order, labels, instances = [], {}, {}
    for row in rows:
        bag = row[1]
        if bag not in instances:
            order.append(bag)
            instances[bag] = []
        labels[bag] = int(row[0])
        instances[bag].append([float(v) for v in row[2:]])
    bags, y, ids = DOCUMENTED[name][0](return_ids=True)
    assert list(ids) == order
    assert list(y) == [labels[b] for b in order]
    for bag, id_ in zip(bags, ids):
        assert np.array_equal(bag, np.array(instances[id_]))
