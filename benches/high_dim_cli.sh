#!/usr/bin/env bash
# Regenerates the README's D = 6,000 rows (issue #19): every projection's `mil project`
# and the Citation-kNN cross-validations on `mil synth term-counts` (80 bags, 2,000
# instances, 6,000 sparse features; 96 MB as f64), as whole runs of the `mil` program:
# CPU seconds (user + system), peak RSS and wall seconds, with the load average before
# and after. `mil info` is the data load alone (CSV parse included in every other row).
#
# Usage: benches/high_dim_cli.sh        (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p mil-toolkit
mil=target/release/mil
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mil" synth term-counts -o "$dir/tc.csv" --quiet > /dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run | CPU s | peak RSS MB | wall s |"
echo "|---|---|---|---|"
run() {
    local label=$1
    shift
    if ! /usr/bin/time -f "%U %S %M %e" -o "$dir/time" "$@" > /dev/null 2> "$dir/err"; then
        cat "$dir/err" >&2
        exit 1
    fi
    awk -v l="$label" '{ printf "| %s | %.2f | %d | %.2f |\n", l, $1 + $2, $3 / 1024, $4 }' "$dir/time"
}
run "mil info (load only)" "$mil" info "$dir/tc.csv"
for p in pca bmida clfda lfda mmida; do
    run "mil project --projection $p --dim 10" "$mil" project "$dir/tc.csv" --projection "$p" --dim 10 -o "$dir/out.csv" --quiet
done
run "mil project --projection lda --dim 1" "$mil" project "$dir/tc.csv" --projection lda --dim 1 -o "$dir/out.csv" --quiet
run "mil cv --projection bmida --dim 10 --classifier citation-knn" "$mil" cv "$dir/tc.csv" --projection bmida --dim 10 --classifier citation-knn --quiet --json
run "mil cv --classifier citation-knn" "$mil" cv "$dir/tc.csv" --classifier citation-knn --quiet --json
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
