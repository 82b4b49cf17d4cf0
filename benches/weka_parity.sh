#!/usr/bin/env bash
# Weka 3.6 and mil side by side on musk2 with Weka's own folds: for MISVM, MIDD,
# MIEMDD, SimpleMI and MIWrapper, the CPU time (user + system) and peak RSS of
# `java ... -t musk2.arff -x 10 -s 1 -p 0` and of the matching `mil cv musk2
# --folds-file data/weka-folds/folds_musk2_weka_seed1.csv`, measured in one run by GNU
# time, with the machine, load, date and commit. Each Weka run is cut after
# WEKA_TIMEOUT seconds of wall time (default 2700); a cut run is reported as such.
#
# Usage: benches/weka_parity.sh [--write]
#   prints the block; --write also replaces it in docs/reproduction/weka.md between the
#   `weka-parity:begin`/`weka-parity:end` markers. Needs java and
#   /usr/share/java/weka.jar (Debian's `weka` package).
set -euo pipefail
write=false
[ "${1:-}" = --write ] && write=true
cd "$(dirname "$0")/.."
weka=/usr/share/java/weka.jar
timeout_s=${WEKA_TIMEOUT:-2700}
command -v java >/dev/null && [ -f "$weka" ] || { echo "java or $weka missing" >&2; exit 1; }
cargo build --release --quiet -p mil-toolkit
mil=target/release/mil
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scripts/csv-to-arff.py host/data/musk2.csv "$dir/musk2.arff"
folds=data/weka-folds/folds_musk2_weka_seed1.csv
logistic=(-W weka.classifiers.functions.Logistic -- -R 1)

# measure NAME CMD...: "cpu_seconds peak_mib status" of one run.
measure() {
    local name=$1
    shift
    local status=0
    /usr/bin/time -f "%U %S %M" -o "$dir/$name.time" "$@" >"$dir/$name.out" 2>"$dir/$name.err" || status=$?
    awk -v s="$status" 'END { printf "%.2f %.0f %s", $1 + $2, $3 / 1024, s }' "$dir/$name.time"
}

# row LABEL WEKA_CLASS "WEKA OPTIONS" "MIL ARGS" (Weka's options last: after `--` they
# belong to the base learner)
row() {
    local label=$1 class=$2 wopts=$3 margs=$4
    local wargs="$class${wopts:+ $wopts}"
    # shellcheck disable=SC2086
    read -r wc wm ws <<<"$(measure weka timeout "$timeout_s" java -Xmx4g -cp "$weka" \
        weka.classifiers.mi.$class -t "$dir/musk2.arff" -x 10 -s 1 -p 0 $wopts)"
    # shellcheck disable=SC2086
    read -r mc mm ms <<<"$(measure mil "$mil" cv musk2 $margs --folds-file "$folds" --quiet)"
    local weka_cell="$wc s / $wm MiB"
    [ "$ws" = 124 ] && weka_cell="cut after ${timeout_s} s wall: $wc s / $wm MiB, unfinished"
    [ "$ws" != 0 ] && [ "$ws" != 124 ] && weka_cell="failed (exit $ws)"
    local ratio="—"
    # Below 10 with one decimal, so that a ratio under 1 does not print as 1.
    [ "$ws" = 0 ] && [ "$ms" = 0 ] && ratio=$(awk -v w="$wc" -v m="$mc" 'BEGIN { r = w / (m > 0.05 ? m : 0.05); printf (r < 10 ? "%.1f×" : "%.0f×"), r }')
    [ "$ws" = 124 ] && [ "$ms" = 0 ] && ratio=$(awk -v w="$wc" -v m="$mc" 'BEGIN { r = w / (m > 0.05 ? m : 0.05); printf (r < 10 ? "> %.1f×" : "> %.0f×"), r }')
    echo "| $label | \`$wargs\` | $weka_cell | \`mil cv musk2 $margs\` | $mc s / $mm MiB | $ratio |"
}

block() {
    echo "Machine: $(python3 -c 'import sys; sys.path.insert(0, "benches"); import benchlib; m = benchlib.machine(); print(m["cpu"], "×", m["cores"])');" \
        "$(date -u +%Y-%m-%d), commit $(git rev-parse --short=12 HEAD), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| classifier | Weka 3.6 | Weka CPU / peak RSS | ours | ours CPU / peak RSS | CPU ratio |"
    echo "|---|---|---|---|---|---|"
    row MISVM MISVM "" "--classifier mi-svm --scaling minmax --max-iterations 500"
    row MIDD MIDD "" "--classifier dd"
    row MIEMDD MIEMDD "" "--classifier em-dd"
    row "SimpleMI (mean)" SimpleMI "-M 1 ${logistic[*]}" "--classifier simple-mi --summary mean --ridge 1"
    row "MIWrapper (arithmetic)" MIWrapper "-P 1 ${logistic[*]}" "--classifier mi-wrapper --combine arithmetic --ridge 1"
    echo
    echo "Load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

out=$(block)
echo "$out"
if $write; then
    echo "$out" | python3 benches/replace_block.py docs/reproduction/weka.md weka-parity
fi
