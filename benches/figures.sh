#!/usr/bin/env bash
# Draws the method pages' figures (docs/img/*.svg): with `mil project --plot` the first
# two projected dimensions of every instance, coloured by its bag's label; with `mil cv
# --plot` the ROC curve of the pooled out-of-fold scores (10-fold CV, seed 1); with `mil
# cluster --plot` a clustering (seed 1).
#
#   mida-set-one-{pca,lfda,clfda,bmida}.svg   MIDA's synthetic set one (seed 1, all
#       80 bags), d = 2: PCA's plane beside the discriminant projections'.
#   mida-set-two-mmida.svg                       set two (three classes), M-MIDA d = 2
#   mi-alm-set-ii.svg, midr-set-ii.svg           MI-ALM's set II (D = 100, seed 1), d = 2
#   musk1-bmida.svg                              musk1, B-MIDA d = 2
#   citation-knn-musk1-roc.svg, milr-musk1-roc.svg   ROC curves on musk1
#   citation-knn-corel3-roc.svg                  one curve per class on corel3
#   m3ic-corel3.svg                              corel3 clustered by M³IC, k = 3 (`mil
#       cluster --plot`: the bag means on their first two principal axes)
#
# Usage: benches/figures.sh [path/to/mil]   (default: target/release/mil, built first)
set -euo pipefail
cd "$(dirname "$0")/.."
mil=${1:-}
if [ -z "$mil" ]; then
    cargo build --release --quiet -p mil-toolkit
    mil=target/release/mil
fi
mil=$(realpath "$mil")
img=$PWD/docs/img
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$img"
# Run inside the scratch directory so that the figures' titles name the data file only.
cd "$dir"
"$mil" synth mida-one --seed 1 -o mida-one.csv --quiet > /dev/null
"$mil" synth mida-two --seed 1 -o mida-two.csv --quiet > /dev/null
"$mil" synth mialm-ii --seed 1 -o mialm-ii.csv --quiet > /dev/null
# plot NAME DATA PROJECTION [FLAGS...]: one figure, d = 2.
plot() {
    local name=$1 data=$2 projection=$3
    shift 3
    "$mil" project "$data" --projection "$projection" --dim 2 "$@" \
        -o out.csv --plot "$img/$name.svg" --quiet > /dev/null
    echo "docs/img/$name.svg"
}
plot mida-set-one-pca mida-one.csv pca
plot mida-set-one-lfda mida-one.csv lfda
plot mida-set-one-clfda mida-one.csv clfda
plot mida-set-one-bmida mida-one.csv bmida
plot mida-set-two-mmida mida-two.csv mmida
plot mi-alm-set-ii mialm-ii.csv mi-alm --alpha 0.2
plot midr-set-ii mialm-ii.csv midr --alpha 0.5 --midr-c2 20
plot musk1-bmida musk1 bmida
# roc NAME DATA [CV FLAGS...]: the ROC curve of one 10-fold CV.
roc() {
    local name=$1 data=$2
    shift 2
    "$mil" cv "$data" "$@" --folds 10 --seed 1 --plot "$img/$name.svg" --quiet > /dev/null
    echo "docs/img/$name.svg"
}
roc citation-knn-musk1-roc musk1 --classifier citation-knn --references 2 --citers 4
roc citation-knn-corel3-roc corel3 --classifier citation-knn --references 2 --citers 4
roc milr-musk1-roc musk1 --classifier milr
# cluster NAME DATA [CLUSTER FLAGS...]: one clustering's bags (seed 1).
cluster() {
    local name=$1 data=$2
    shift 2
    "$mil" cluster "$data" "$@" --seed 1 --plot "$img/$name.svg" --quiet > /dev/null
    echo "docs/img/$name.svg"
}
cluster m3ic-corel3 corel3 --method m3ic --k 3
