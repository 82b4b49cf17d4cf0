#!/usr/bin/env bash
# Regenerates the README's two box-kernel SVM tables (section "Set-kernel SVM over bags"):
# the 10-fold CV error of every kernel × map on Musk1 and Musk2 (error = 1 − accuracy,
# ± the standard deviation over folds; with the CPU seconds of each run, GNU time user +
# system), and the Table 6 row set on Musk1 (CPU ms per kernel evaluation and the
# negative-eigenvalue shares of the Gram matrix at ε = 0.2, 0.1, 0.05). Usage:
#   bash benches/box_svm_tables.sh [path/to/mil]     (default: target/release/mil, built)
set -euo pipefail
cd "$(dirname "$0")/.."
mil=${1:-}
if [ -z "$mil" ]; then
    cargo build --release -q -p mil-toolkit --bin mil
    mil=target/release/mil
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Runs `mil ARGS --json --quiet`, leaving the JSON in $work/out.json and the CPU seconds
# in $work/cpu.
timed() {
    /usr/bin/time -f "%U %S" -o "$work/time" "$mil" "$@" --json --quiet >"$work/out.json"
    awk '{ printf "%.2f", $1 + $2 }' "$work/time" >"$work/cpu"
}
field() {
    python3 -c "import json, sys; d = json.load(open('$work/out.json')); print($1)"
}

echo '| kernel, map | Musk1 | Musk2 | CPU s (Musk1 / Musk2) |'
echo '|---|---|---|---|'
for kernel in kand kandor kmin; do
    for map in none emp emp-trans; do
        row=""
        cpus=""
        for data in musk1 musk2; do
            timed cv "$data" --classifier svm --kernel "$kernel" --map "$map" --folds 10 --seed 1
            cell=$(field "'%.3f ± %.3f' % (1 - d['accuracy'], d['fold_summary']['sd'])")
            row="$row | $cell"
            cpus="$cpus${cpus:+ / }$(cat "$work/cpu")"
        done
        echo "| $kernel $map$row | $cpus |"
    done
done
echo
echo '| kernel ε | CPU ms per evaluation | negative eigenvalues | of φ(K), ρ = 1/50 | samples |'
echo '|---|---|---|---|---|'
for kernel in kand kandor kmin; do
    for eps in 0.2 0.1 0.05; do
        timed gram musk1 --kernel "$kernel" --epsilon "$eps" --delta 0.01 --seed 1 -o "$work/gram.csv"
        bags=$(field "d['bags']")
        ms=$(awk -v c="$(cat "$work/cpu")" -v n="$bags" 'BEGIN { printf "%.3f", 1000 * c / (n * (n + 1) / 2) }')
        neg=$(field "'%.1f%%' % (100 * d['negative_eigenvalues'])")
        neg_svm=$(field "'%.1f%%' % (100 * d['negative_eigenvalues_svm'])")
        samples=$(field "d['samples']")
        echo "| $kernel $eps | $ms | $neg | $neg_svm | $samples |"
    done
done
uptime
