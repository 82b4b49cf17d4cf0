#!/usr/bin/env python3
"""Collect Weka's per-bag cross-validation predictions into one CSV.

Usage: scripts/weka-predictions.py FOLDS.csv OUT.csv COLUMN=WEKA_OUTPUT...

FOLDS.csv is data/weka-folds/folds_D_weka_seed1.csv (bag_id,label,fold in the order
Weka evaluates the test bags); each WEKA_OUTPUT is what `java ... -x 10 -s 1 -p 0`
printed. Weka's prediction rows come in that same order; the actual class Weka prints
on each row must equal the folds file's label, else the files do not belong together.
Writes bag_id,fold,COLUMN... with Weka's predicted class (0 or 1) per bag.
"""
import csv
import os
import re
import sys

ROW = re.compile(r"^\s*\d+\s+\d+:(\S+)\s+\d+:(\S+)\s")


def predictions(path):
    with open(path) as f:
        return [m.groups() for m in map(ROW.match, f) if m]


def main(argv):
    if len(argv) < 4 or any("=" not in a for a in argv[3:]):
        sys.exit(__doc__)
    folds_path, out = argv[1], argv[2]
    with open(folds_path, newline="") as f:
        folds = list(csv.DictReader(f))
    columns = []
    for arg in argv[3:]:
        name, path = arg.split("=", 1)
        rows = predictions(path)
        if len(rows) != len(folds):
            sys.exit(f"{path}: {len(rows)} predictions, {len(folds)} bags in {folds_path}")
        for k, ((actual, _), bag) in enumerate(zip(rows, folds)):
            if actual != bag["label"]:
                sys.exit(f"{path}: prediction {k + 1} is of class {actual}, bag "
                         f"{bag['bag_id']} of {folds_path} has label {bag['label']}")
        columns.append((name, [p for _, p in rows]))
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["bag_id", "fold"] + [n for n, _ in columns])
        for k, bag in enumerate(folds):
            w.writerow([bag["bag_id"], bag["fold"]] + [c[k] for _, c in columns])
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv)
