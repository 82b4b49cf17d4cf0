#!/usr/bin/env bash
# The results table: every method below on every shipped benchmark set with 10 × 10-fold
# bag-level CV (seed 1), written to docs/results.md (between its generated markers),
# benches/results/results.csv and .json, and the folds to benches/results/folds/.
#
#   bash benches/results.sh                  # the whole table
#   bash benches/results.sh --quick          # 1 × 10-fold, written under target/results-quick/
#   bash benches/results.sh --only milr-noisy-or --data musk1   # rerun cells, keep the rest
#
# CPU seconds (user + system) and peak resident memory are the `mil cv` process's own,
# from GNU time (/usr/bin/time); the build is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

# One method a line: `name | mil cv arguments [| repetitions per data set]`. The
# optional third field runs fewer repetitions on the named sets (`musk2=3`), which the
# page labels; `--folds`, `--repeats`, `--seed` and the data set are added by the helper.
METHODS='
citation-knn          | --classifier citation-knn --references 2 --citers 4
milr-noisy-or         | --classifier milr --pooling noisy-or
simple-mi             | --classifier simple-mi
mi-wrapper            | --classifier mi-wrapper
mi-vlad               | --classifier mi-vlad
mi-fv                 | --classifier mi-fv
mi-fv-cv              | --classifier mi-fv --codebook 1,2,4
mi-fv-k2-r10          | --classifier mi-fv --codebook 2 --ridge 10
mi-svm                | --classifier mi-svm                             | musk2=1,elephant=1,fox=1,tiger=1,corel_dogs=1
mi-svm-bag            | --classifier mi-svm-bag                         | musk2=1,corel_dogs=1
dd                    | --classifier dd | musk1=2,musk2=1,elephant=1,fox=1,tiger=1,corel_dogs=1
em-dd                 | --classifier em-dd | musk1=2,musk2=1,elephant=1,fox=1,tiger=1,corel_dogs=1
svm-kand              | --classifier svm --kernel kand
svm-kandor            | --classifier svm --kernel kandor
svm-kmin              | --classifier svm --kernel kmin
svm-nsk               | --classifier svm --kernel nsk
svm-mi-rbf            | --classifier svm --kernel mi-rbf --scaling minmax
svm-mi-rbf-scaled     | --classifier svm --kernel mi-rbf --scaling minmax --gamma scaled
smil                  | --classifier smil                               | musk2=3
sbmil                 | --classifier sbmil                              | musk2=3
miles                 | --classifier miles                              | corel_dogs=1
mi-graph              | --classifier mi-graph
mi-graph-sqrt         | --classifier mi-graph --graph-norm sqrt
attention             | --classifier attention                          | corel_dogs=1,corel3=1,sival6=1
attention-h64         | --classifier attention --hidden 64              | corel_dogs=1,corel3=1,sival6=1
attention-h32         | --classifier attention --hidden 32              | corel_dogs=1,corel3=1,sival6=1
bmida10-citation-knn  | --projection bmida --dim 10 --classifier citation-knn --references 2 --citers 4
auto                  | --classifier auto | musk2=2,elephant=2,fox=2,tiger=2,corel_dogs=1,corel3=1,sival6=1
auto-vote3            | --classifier auto --vote 3 | musk2=2,elephant=2,fox=2,tiger=2,corel_dogs=1,corel3=1,sival6=1
'

# With the attention network's training (the `attention` feature).
cargo build --release -p mil-toolkit --features attention --quiet
exec python3 benches/results.py --mil target/release/mil --methods "$METHODS" "$@"
