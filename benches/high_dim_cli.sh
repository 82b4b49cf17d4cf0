#!/usr/bin/env bash
# Regenerates the D = 6,000 table of docs/reproduction/high-dim.md: every projection's
# `mil project` and the Citation-kNN cross-validations on `mil synth term-counts` (80 bags, 2,000
# instances, 6,000 sparse features; 96 MB as f64), as whole runs of the `mil` program:
# CPU seconds (user + system), peak RSS and wall seconds, with the load average before
# and after. `mil info` is the data load alone (CSV parse included in every other row).
#
# Usage: benches/high_dim_cli.sh [--write] [path/to/mil]
#   prints the block (default binary: target/release/mil, built first); --write also
#   replaces it in docs/reproduction/high-dim.md between the `high-dim:begin` and
#   `high-dim:end` markers.
set -euo pipefail
write=false
mil=""
for arg in "$@"; do
    case $arg in
        --write) write=true ;;
        *) mil=$(realpath "$arg") ;;
    esac
done
cd "$(dirname "$0")/.."
if [ -z "$mil" ]; then
    cargo build --release --quiet -p mil-toolkit
    mil=target/release/mil
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mil" synth term-counts -o "$dir/tc.csv" --quiet > /dev/null
block() {
    echo "$("$mil" --version), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
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
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
out=$(block)
echo "$out"
if $write; then
    python3 benches/replace_block.py docs/reproduction/high-dim.md high-dim <<<"$out"
fi
