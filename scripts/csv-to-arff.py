#!/usr/bin/env python3
"""Write a shipped MIL CSV (label, bag_id, features...) as Weka's multi-instance ARFF.

Usage: scripts/csv-to-arff.py DATA.csv OUT.arff [--drop-constant]

Weka reads multi-instance data as one relational attribute per bag. Bags are written
in the order they first appear in the CSV, which is the order `mil` reads them, so
Weka's `-x 10 -s 1` folds match data/weka-folds/folds_*_weka_seed1.csv.
--drop-constant removes the columns that take one value over all instances
(elephant -> elephant_nc).
"""
import csv
import os
import sys


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 2 or flags - {"--drop-constant"}:
        sys.exit(__doc__)
    src, out = args
    bags, labels = {}, {}
    with open(src, newline="") as f:
        for line, row in enumerate(csv.reader(f), 1):
            if len(row) < 3:
                sys.exit(f"{src}:{line}: expected label,bag_id,features...")
            bags.setdefault(row[1], []).append(row[2:])
            if labels.setdefault(row[1], row[0]) != row[0]:
                sys.exit(f"{src}:{line}: bag {row[1]} has two labels")
    rows = [r for b in bags.values() for r in b]
    d = len(rows[0])
    if any(len(r) != d for r in rows):
        sys.exit(f"{src}: rows have different numbers of features")
    keep = range(d)
    if "--drop-constant" in flags:
        keep = [k for k in keep if len({float(r[k]) for r in rows}) > 1]
    name = os.path.splitext(os.path.basename(out))[0]
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("@relation %s\n@attribute bag_id {%s}\n" % (name, ",".join(bags)))
        f.write("@attribute bag relational\n")
        f.writelines("  @attribute f%d numeric\n" % (k + 1) for k in keep)
        f.write("@end bag\n@attribute class {0,1}\n@data\n")
        for bag, inst in bags.items():
            body = "\\n".join(",".join(r[k] for k in keep) for r in inst)
            f.write("%s,'%s',%s\n" % (bag, body, labels[bag]))
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv)
