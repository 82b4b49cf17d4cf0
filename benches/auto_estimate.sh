#!/usr/bin/env bash
# Regenerates the "estimate before the work" table of docs/guide/selection.md: for each
# data set, the CPU time `mil cv DATA --classifier auto` estimates before any fold runs
# (one pilot fit per candidate, sampled box-kernel Gram entries) beside the CPU time GNU
# time measures for the same whole run (user + system, the estimate's measuring
# included), on one thread, with the run's accuracy and AUROC, the machine, load average
# and commit. The runs' JSON reports (with the choice of every fold) are kept in
# target/auto_estimate/.
#
# Usage: benches/auto_estimate.sh [--write] [DATA...]
#   default DATA: musk1 elephant fox tiger (about 17 CPU minutes); builds
#   target/release/mil with the attention network first. --write also replaces the
#   block in docs/guide/selection.md between the `auto-estimate:begin`/`:end` markers.
set -euo pipefail
write=false
sets=()
for arg in "$@"; do
    case $arg in
        --write) write=true ;;
        *) sets+=("$arg") ;;
    esac
done
[ ${#sets[@]} -gt 0 ] || sets=(musk1 elephant fox tiger)
cd "$(dirname "$0")/.."
cargo build --release -p mil-toolkit --features attention --quiet
mil="${CARGO_TARGET_DIR:-target}/release/mil"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
reports="${CARGO_TARGET_DIR:-target}/auto_estimate"
mkdir -p "$reports"

block() {
    echo "$("$mil" --version), tree $(git describe --always --dirty 2>/dev/null || echo '?'); $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| data set | accuracy (AUROC) | estimated before the work | measured (whole run) | measured ÷ estimated |"
    echo "|---|---:|---:|---:|---:|"
    for d in "${sets[@]}"; do
        # A budget far above the run prints the estimate and leaves every candidate in.
        RAYON_NUM_THREADS=1 /usr/bin/time -f "%U %S" -o "$dir/time" \
            "$mil" cv "$d" --classifier auto --folds 10 --seed 1 --max-cpu-minutes 100000 --json \
            > "$reports/$d.json" 2> "$dir/err" || { cat "$dir/err" >&2; exit 1; }
        score=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%.1f %% (%.3f)" % (100 * r["accuracy"], r["auroc"]))' "$reports/$d.json")
        estimate=$(sed -n 's/.* is estimated at \([0-9.]*\) CPU s.*/\1/p' "$dir/err" | head -1)
        [ -n "$estimate" ] || { echo "no estimate printed for $d" >&2; cat "$dir/err" >&2; exit 1; }
        awk -v d="$d" -v s="$score" -v e="$estimate" '{ m = $1 + $2
            printf "| %s | %s | %.0f CPU s | %.1f CPU s | %.2f |\n", d, s, e, m, (e > 0 ? m / e : 0) }' "$dir/time"
    done
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

out=$(block)
echo "$out"
if $write; then
    echo "$out" | python3 benches/replace_block.py docs/guide/selection.md auto-estimate
fi
