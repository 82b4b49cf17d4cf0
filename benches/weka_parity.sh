#!/usr/bin/env bash
# Weka 3.6 and mil side by side on musk2 with Weka's own folds: for MISVM, MIDD,
# MIEMDD, SimpleMI and MIWrapper, the CPU time (user + system) and peak RSS of
# `java ... -t musk2.arff -x 10 -s 1 -p 0` and of the matching `mil cv musk2
# --folds-file data/weka-folds/folds_musk2_weka_seed1.csv`, each pair measured back to
# back (CPU time by wait4), with the date, commit and load of that row, and the machine.
# A pair whose Weka run takes under a minute of CPU is measured five times and the
# medians reported. Each Weka run is cut after WEKA_TIMEOUT seconds of wall time (default
# 2700); a cut run is reported as such.
#
# Usage: benches/weka_parity.sh [--write] [--rows CLASS,...]
#   prints the block; --write also replaces it in docs/reproduction/weka.md between the
#   `weka-parity:begin`/`weka-parity:end` markers. --rows reruns only the rows of these
#   Weka classes (MISVM, MIDD, MIEMDD, SimpleMI, MIWrapper: a change that touches one
#   classifier need not wait an hour for Weka's MIDD) and keeps the page's other rows
#   with their own stamps; refused if the page's block is from another machine. Needs
#   java and /usr/share/java/weka.jar (Debian's `weka` package).
set -euo pipefail
write=false
rows=all
while [ $# -gt 0 ]; do
    case $1 in
    --write) write=true ;;
    --rows)
        rows=${2:?--rows needs a list of Weka classes}
        shift
        ;;
    *)
        echo "unknown argument: $1 (usage: benches/weka_parity.sh [--write] [--rows CLASS,...])" >&2
        exit 2
        ;;
    esac
    shift
done
cd "$(dirname "$0")/.."
page=docs/reproduction/weka.md
weka=/usr/share/java/weka.jar
timeout_s=${WEKA_TIMEOUT:-2700}
SHORT_S=60
REPEATS=5
command -v java >/dev/null && [ -f "$weka" ] || { echo "java or $weka missing" >&2; exit 1; }
cargo build --release --quiet -p mil-toolkit
mil=target/release/mil
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scripts/csv-to-arff.py host/data/musk2.csv "$dir/musk2.arff"
folds=data/weka-folds/folds_musk2_weka_seed1.csv
logistic=(-W weka.classifiers.functions.Logistic -- -R 1)

# measure NAME CMD...: "cpu_seconds peak_mib status" of one run, CPU time (user +
# system of the command and the children it waited for) to the microsecond by wait4:
# GNU time's two decimals would make a 0.06 s run anything from 0.055 to 0.065 s.
measure() {
    local name=$1
    shift
    python3 - "$dir/$name" "$@" <<'PY'
import os, subprocess, sys
with open(sys.argv[1] + ".out", "wb") as out, open(sys.argv[1] + ".err", "wb") as err:
    child = subprocess.Popen(sys.argv[2:], stdout=out, stderr=err)
    _, status, ru = os.wait4(child.pid, 0)
print(f"{ru.ru_utime + ru.ru_stime:.6f} {ru.ru_maxrss / 1024:.0f} {os.waitstatus_to_exitcode(status)}")
PY
}

# median X...: the median of the numbers (the mean of the middle two for an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# seconds S: S with two decimals, or three below one second.
seconds() { awk -v s="$1" 'BEGIN { printf (s < 1 ? "%.3f" : "%.2f"), s }'; }

# The commit of the working tree, marked -dirty when it has changes.
commit=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- host core Cargo.toml Cargo.lock || commit="$commit-dirty"
load1() { cut -d' ' -f1 /proc/loadavg; }

# row LABEL WEKA_CLASS "WEKA OPTIONS" "MIL ARGS" (Weka's options last: after `--` they
# belong to the base learner): the row measured now, or the page's row if --rows leaves
# this class out.
row() {
    local label=$1 class=$2 wopts=$3 margs=$4
    if [ "$rows" != all ] && ! [[ ",$rows," == *",$class,"* ]]; then
        # The page's row of this class, from the block alone (the page's other tables
        # name the classes too).
        local kept
        kept=$(sed -n '/weka-parity:begin/,/weka-parity:end/p' "$page" | grep -F "| $label | \`$class" | head -1)
        [ -n "$kept" ] || { echo "--rows: the page's block has no $class row to keep; rerun every row" >&2; exit 2; }
        echo "$kept"
        return
    fi
    local wargs="$class${wopts:+ $wopts}" before
    before=$(load1)
    # One run of each side: sets wc wm ws (Weka) and mc mm ms (ours).
    pair() {
        # shellcheck disable=SC2086
        read -r wc wm ws <<<"$(measure weka timeout "$timeout_s" java -Xmx4g -cp "$weka" \
            weka.classifiers.mi.$class -t "$dir/musk2.arff" -x 10 -s 1 -p 0 $wopts)"
        # shellcheck disable=SC2086
        read -r mc mm ms <<<"$(measure mil "$mil" cv musk2 $margs --folds-file "$folds" --quiet)"
    }
    local wc wm ws mc mm ms
    pair
    # A pair whose Weka run takes under SHORT_S seconds of CPU is measured REPEATS times,
    # each side's median CPU and peak reported: Weka's JVM start-up alone moves such a run
    # by ±15 %, and ours is tens of milliseconds.
    local runs=1
    if [ "$ws" = 0 ] && [ "$ms" = 0 ] && awk -v w="$wc" -v s="$SHORT_S" 'BEGIN { exit !(w < s) }'; then
        local wcs=("$wc") wms=("$wm") mcs=("$mc") mms=("$mm")
        for ((runs = 2; runs <= REPEATS; runs++)); do
            pair
            [ "$ws" = 0 ] && [ "$ms" = 0 ] || break
            wcs+=("$wc") wms+=("$wm") mcs+=("$mc") mms+=("$mm")
        done
        runs=${#wcs[@]}
        wc=$(median "${wcs[@]}") wm=$(median "${wms[@]}") mc=$(median "${mcs[@]}") mm=$(median "${mms[@]}")
    fi
    local weka_cell
    weka_cell="$(seconds "$wc") s / $wm MiB"
    [ "$ws" = 124 ] && weka_cell="cut after ${timeout_s} s wall: $(seconds "$wc") s / $wm MiB, unfinished"
    [ "$ws" != 0 ] && [ "$ws" != 124 ] && weka_cell="failed (exit $ws)"
    local ratio="—"
    # Below 10 with one decimal, so that a ratio under 1 does not print as 1.
    [ "$ws" = 0 ] && [ "$ms" = 0 ] && ratio=$(awk -v w="$wc" -v m="$mc" 'BEGIN { r = w / (m > 0.001 ? m : 0.001); printf (r < 10 ? "%.1f×" : "%.0f×"), r }')
    [ "$ws" = 124 ] && [ "$ms" = 0 ] && ratio=$(awk -v w="$wc" -v m="$mc" 'BEGIN { r = w / (m > 0.001 ? m : 0.001); printf (r < 10 ? "> %.1f×" : "> %.0f×"), r }')
    echo "| $label | \`$wargs\` | $weka_cell | \`mil cv musk2 $margs\` | $(seconds "$mc") s / $mm MiB | $ratio$( [ "$runs" -gt 1 ] && echo ", median of $runs runs") | $(date -u +%Y-%m-%d), $commit, load $before → $(load1) |"
}

machine="Machine: $(python3 -c 'import sys; sys.path.insert(0, "benches"); import benchlib; m = benchlib.machine(); print(m["cpu"], "×", m["cores"])')"
if [ "$rows" != all ] && ! grep -qxF "$machine" "$page"; then
    echo "--rows: the page's block is from another machine than this ($machine); rerun every row" >&2
    exit 2
fi

block() {
    echo "$machine"
    echo
    echo "| classifier | Weka 3.6 | Weka CPU / peak RSS | ours | ours CPU / peak RSS | CPU ratio | measured (1-minute load before → after) |"
    echo "|---|---|---|---|---|---|---|"
    row MISVM MISVM "" "--classifier mi-svm --scaling minmax --max-iterations 500"
    row MIDD MIDD "" "--classifier dd"
    row MIEMDD MIEMDD "" "--classifier em-dd"
    row "SimpleMI (mean)" SimpleMI "-M 1 ${logistic[*]}" "--classifier simple-mi --summary mean --ridge 1"
    row "MIWrapper (arithmetic)" MIWrapper "-P 1 ${logistic[*]}" "--classifier mi-wrapper --combine arithmetic --ridge 1"
}

out=$(block)
echo "$out"
if $write; then
    echo "$out" | python3 benches/replace_block.py "$page" weka-parity
fi
