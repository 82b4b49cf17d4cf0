#!/usr/bin/env bash
# The box kernels of two builds side by side in one run: builds `mil` at BASELINE (a git
# revision; default 8d4429c, whose estimator tests each sampled box point by point,
# without the per-bag filter pass and the relative-entropy stopping side; kept in
# target/bench-baseline/REV so a second run does not rebuild it) and at the working
# tree, then times the same commands with each (user + system CPU seconds, GNU time).
# With Java and Weka (/usr/share/java/weka.jar, Debian's `weka`) it also times Weka's
# MISMO with its MI-RBF kernel on Musk2, the peer the k∧/∨ SVM is measured against.
# Usage:
#   bash benches/box_kernel_before_after.sh [BASELINE]
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=${1:-8d4429c}
cache="$PWD/target/bench-baseline/$baseline"
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
if [ ! -x "$cache/mil" ]; then
    git worktree add --detach "$work/src" "$baseline" >/dev/null
    (cd "$work/src" && CARGO_TARGET_DIR="$work/target" cargo build --release -q -p mil-toolkit --bin mil)
    mkdir -p "$cache"
    cp "$work/target/release/mil" "$cache/mil"
fi
cargo build --release -q -p mil-toolkit --bin mil
before="$cache/mil"
after=target/release/mil
# CPU seconds of one run; the JSON it prints is left in $work/out.json.
cpu() {
    /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$work/out.json" 2>/dev/null
    awk '{ printf "%.2f", $1 + $2 }' "$work/time"
}
samples() {
    python3 -c "import json; print('%.2f M' % (json.load(open('$work/out.json'))['samples'] / 1e6))"
}
accuracy() {
    python3 -c "import json; print('%.1f %%' % (100 * json.load(open('$work/out.json'))['accuracy']))"
}
printf '| job | samples (after) | before (CPU s) | after (CPU s) | ratio |\n|---|---|---|---|---|\n'
while read -r label kind args; do
    # shellcheck disable=SC2086
    b=$(cpu "$before" $args --quiet --json)
    # shellcheck disable=SC2086
    a=$(cpu "$after" $args --quiet --json)
    case $kind in
        gram) extra=$(samples) ;;
        cv) extra="accuracy $(accuracy)" ;;
    esac
    awk -v l="$label" -v e="$extra" -v b="$b" -v a="$a" \
        'BEGIN { printf "| %s | %s | %.2f | %.2f | %.1f× |\n", l, e, b, a, b / a }'
done <<JOBS
musk1-kand gram gram musk1 --kernel kand -o $work/g.csv
musk1-kandor gram gram musk1 --kernel kandor -o $work/g.csv
musk1-kmin gram gram musk1 --kernel kmin -o $work/g.csv
musk2-kand gram gram musk2 --kernel kand -o $work/g.csv
musk1-kand-paper gram gram musk1 --kernel kand --estimator paper -o $work/g.csv
musk2-kandor-svm-cv cv cv musk2 --classifier svm --kernel kandor --rho 0.02 --folds 10 --seed 1
JOBS
weka=/usr/share/java/weka.jar
if command -v java >/dev/null && [ -f "$weka" ]; then
    # Weka reads multi-instance data as ARFF with one relational attribute per bag.
    python3 - "$work/musk2.arff" host/data/musk2.csv <<'PY'
import csv, sys
out, src = sys.argv[1], sys.argv[2]
bags, labels = {}, {}
for row in csv.reader(open(src)):  # label, bag, features
    bags.setdefault(row[1], []).append(row[2:])
    labels[row[1]] = row[0]
d = len(next(iter(bags.values()))[0])
with open(out, "w") as f:
    f.write("@relation musk2\n@attribute bag_id {%s}\n" % ",".join(bags))
    f.write("@attribute bag relational\n")
    f.writelines("  @attribute f%d numeric\n" % (k + 1) for k in range(d))
    f.write("@end bag\n@attribute class {0,1}\n@data\n")
    for bag, rows in bags.items():
        f.write("%s,'%s',%s\n" % (bag, "\\n".join(",".join(r) for r in rows), labels[bag]))
PY
    /usr/bin/time -f "%U %S" -o "$work/time" java -Xmx4g -cp "$weka" weka.classifiers.mi.MISMO \
        -K weka.classifiers.mi.supportVector.MIRBFKernel -t "$work/musk2.arff" -x 10 -s 1 \
        >"$work/weka.txt" 2>&1
    w=$(awk '{ printf "%.2f", $1 + $2 }' "$work/time")
    acc=$(awk '/=== Stratified cross-validation ===/ { cv = 1 } cv && /Correctly Classified/ { printf "%.1f %%\n", $(NF - 1); exit }' "$work/weka.txt")
    printf '| Weka 3.6 MISMO -K MIRBFKernel, musk2 10-fold CV | accuracy %s | %s | — | — |\n' "$acc" "$w"
else
    echo "(Java or $weka missing: Weka's MISMO not timed)"
fi
uptime
