#!/usr/bin/env bash
# Regenerates data/model.milm and data/bags.bin with the `mil` program (MIL env var, or
# `mil` on the PATH): musk1's B-MIDA d = 10 + MILR model in Q15 (`make-data.sh miles`:
# musk1's MILES model at the defaults in Q15, 40 prototypes; `make-data.sh mi-vlad` and
# `make-data.sh mi-fv`: musk1's miVLAD and miFV models at the defaults in Q15;
# `make-data.sh attention`: musk1's attention network at the defaults, seed 1, in Q15),
# and musk1's bags 1, 2, 3, 48, 49, 50 (three positive, three negative) as little-endian
# i16 counts; the MILR model takes them as they are (`--input integer`: every input step
# 1, quantising is a copy), MILES, miVLAD, miFV and the attention network widen them to
# f64.
set -euo pipefail
cd "$(dirname "$0")"
mil=${MIL:-mil}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "${1:-milr}" in
milr)
    "$mil" train musk1 --classifier milr --projection bmida --dim 10 -o "$tmp/model.json" --quiet
    "$mil" export "$tmp/model.json" --format q15 --input integer -o data/model.milm --quiet
    ;;
miles)
    "$mil" train musk1 --classifier miles -o "$tmp/model.json" --quiet
    "$mil" export "$tmp/model.json" --format q15 -o data/model.milm --quiet
    ;;
mi-vlad | mi-fv)
    "$mil" train musk1 --classifier "$1" -o "$tmp/model.json" --quiet
    "$mil" export "$tmp/model.json" --format q15 -o data/model.milm --quiet
    ;;
attention)
    "$mil" train musk1 --classifier attention --seed 1 -o "$tmp/model.json" --quiet
    "$mil" export "$tmp/model.json" --format q15 -o data/model.milm --quiet
    ;;
*)
    echo "usage: make-data.sh [milr|miles|mi-vlad|mi-fv|attention]" >&2
    exit 2
    ;;
esac
python3 - <<'PY'
import struct
wanted = ["1", "2", "3", "48", "49", "50"]
bags = {}
for line in open("../../host/data/musk1.csv"):
    f = line.strip().split(",")
    if f[1] in wanted:
        bags.setdefault(f[1], []).append([int(v) for v in f[2:]])
d = len(bags[wanted[0]][0])
with open("data/bags.bin", "wb") as out:
    out.write(struct.pack("<II", len(wanted), d))
    for b in wanted:
        out.write(struct.pack("<I", len(bags[b])))
        for x in bags[b]:
            out.write(struct.pack(f"<{d}h", *x))
PY
