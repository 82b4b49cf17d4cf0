#!/usr/bin/env bash
# Regenerates the "whole runs on a quiet machine" table of docs/reproduction/weka.md:
# whole `mil` runs (GNU time: wall seconds and peak RSS) beside Weka's idle-machine times
# from data/weka-folds/README.md (JVM start included) and the papers' figures, with the
# load average before and after. Run it on an otherwise idle machine.
#
# Usage: benches/quiet_table.sh [--write] [path/to/mil]
#   prints the block (default binary: target/release/mil, built first; about a minute);
#   --write also replaces it in docs/reproduction/weka.md between the
#   `quiet-table:begin`/`quiet-table:end` markers.
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
# elephant without its constant columns (Weka's distances are NaN with them).
awk -F, 'NR == FNR { for (i = 3; i <= NF; i++) { if (FNR == 1) first[i] = $i; else if ($i != first[i]) varies[i] = 1 } next }
    { out = $1 "," $2; for (i = 3; i <= NF; i++) if (i in varies) out = out "," $i; print out }' \
    host/data/elephant.csv host/data/elephant.csv > "$dir/elephant_nc.csv"
"$mil" synth mialm-ii --dims 5000 --relevant 20 -o "$dir/mialm.csv" --quiet > /dev/null

block() {
    echo "$("$mil" --version), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| command | wall | vs |"
    echo "|---|---|---|"
    # row LABEL WHO SECONDS -- COMMAND...: one table row from one timed run, with the
    # reference WHO's time in SECONDS and the ratio (SECONDS 0: WHO alone, as text).
    row() {
        local label=$1 who=$2 ref=$3
        shift 4
        /usr/bin/time -f "%e %M" -o "$dir/time" "$@" > /dev/null 2> "$dir/err" || { cat "$dir/err" >&2; exit 1; }
        awk -v l="$label" -v w="$who" -v r="$ref" '{
            vs = (r == 0) ? w : sprintf("%s %s s (%.0f×)", w, r, r / ($1 > 0.005 ? $1 : 0.005))
            printf "| `%s` | %.2f s (%d MB) | %s |\n", l, $1, $2 / 1024, vs }' "$dir/time"
    }
    cv="cv --folds 10 --quiet --json"
    row "mil cv musk1 --classifier citation-knn --scaling weka --folds 10" Weka 2.4 -- $mil $cv musk1 --classifier citation-knn --scaling weka
    row "mil cv elephant_nc.csv --classifier citation-knn --scaling weka --folds 10" Weka 10.7 -- $mil $cv "$dir/elephant_nc.csv" --classifier citation-knn --scaling weka
    row "mil cv musk2 --classifier citation-knn --scaling weka --folds 10" Weka 237 -- $mil $cv musk2 --classifier citation-knn --scaling weka
    row "mil cv musk1 --classifier citation-knn --folds 10 (z-score)" "" 0 -- $mil $cv musk1 --classifier citation-knn
    row "mil cv elephant --classifier citation-knn --folds 10" "" 0 -- $mil $cv elephant --classifier citation-knn
    row "mil cv musk2 --classifier citation-knn --folds 10" "" 0 -- $mil $cv musk2 --classifier citation-knn
    row "mil cv musk1 --classifier milr --folds 10 (noisy-OR)" Weka 6.1 -- $mil $cv musk1 --classifier milr
    row "mil cv elephant --classifier milr --folds 10" Weka 20.6 -- $mil $cv elephant --classifier milr
    row "mil cv musk2 --classifier milr --folds 10" Weka 136 -- $mil $cv musk2 --classifier milr
    row "mil gram musk1 --kernel kand --epsilon 0.1 --delta 0.01" "paper ~18 min" 0 -- $mil gram musk1 --kernel kand --epsilon 0.1 --delta 0.01 -o "$dir/g.csv" --quiet
    row "mil gram musk1 --kernel kmin --epsilon 0.1 --delta 0.01" "" 0 -- $mil gram musk1 --kernel kmin --epsilon 0.1 --delta 0.01 -o "$dir/g.csv" --quiet
    row "mil project musk2 --projection bmida --dim 30" "" 0 -- $mil project musk2 --projection bmida --dim 30 -o "$dir/p.csv" --quiet
    row "mil project (MI-ALM, mialm-ii --dims 5000 --relevant 20) --dim 20" "" 0 -- $mil project "$dir/mialm.csv" --projection mi-alm --dim 20 -o "$dir/p.csv" --quiet
    start=$(date +%s.%N)
    for s in 1 2 3 4 5 6 7 8 9 10; do
        "$mil" cluster corel3 --method m3ic --k 3 --seed "$s" --quiet --json > /dev/null
    done
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "| `mil cluster corel3 --method m3ic --k 3` (5 restarts) | %.3f s mean (seeds 1-10) | paper 1.2 s (MATLAB, one run) |\n", (b - a) / 10 }'
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
out=$(block)
echo "$out"
if $write; then
    python3 benches/replace_block.py docs/reproduction/weka.md quiet-table <<<"$out"
fi
