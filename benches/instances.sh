#!/usr/bin/env bash
# Key-instance metrics of every classifier that scores instances, on synthetic sets with
# known witnesses: each method at its defaults is trained on `mil synth SET --seed 1` and
# predicts the instances of `mil synth SET --seed 2` (a fresh draw), scored against that
# draw's `--truth` by `mil predict --instances --truth`. Prints the Markdown table of
# docs/guide/instances.md.
#
#   bash benches/instances.sh [MIL] [SET]    # MIL: the program (default target/release/mil),
#                                            # SET: mida-one (default) or mialm-ii
set -euo pipefail
cd "$(dirname "$0")/.."
mil=${1:-target/release/mil}
set=${2:-mida-one}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$mil" synth "$set" --seed 1 -o "$dir/train.csv" >/dev/null
"$mil" synth "$set" --seed 2 -o "$dir/test.csv" --truth "$dir/truth.csv" >/dev/null

echo "| method | instance score | instance AUROC | witness precision | bags predicted positive | bag accuracy |"
echo "|---|---|---|---|---|---|"
while IFS='|' read -r name args; do
    name=$(echo "$name" | xargs)
    [ -z "$name" ] && continue
    # shellcheck disable=SC2086
    "$mil" train "$dir/train.csv" $args -o "$dir/model.json" >/dev/null
    "$mil" predict "$dir/model.json" "$dir/test.csv" --instances --truth "$dir/truth.csv" --json \
        >"$dir/instances.json"
    "$mil" predict "$dir/model.json" "$dir/test.csv" --json >"$dir/bags.json"
    python3 - "$name" "$dir/instances.json" "$dir/bags.json" <<'PY'
import json, sys
name, instances, bags = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
m = instances["metrics"]
show = lambda v: "—" if v is None else f"{v:.3f}"
print(f"| {name} | {instances['score_kind']} | {show(m['instance_auroc'])} | "
      f"{show(m['witness_precision'])} | {m['bags_predicted_positive']} | {bags['accuracy']:.3f} |")
PY
done <<'METHODS'
milr               | --classifier milr
mi-wrapper         | --classifier mi-wrapper
mi-vlad            | --classifier mi-vlad
mi-fv              | --classifier mi-fv
svm (mi-rbf)       | --classifier svm --kernel mi-rbf --scaling minmax
mi-svm             | --classifier mi-svm
mi-svm-bag         | --classifier mi-svm-bag
smil               | --classifier smil
sbmil              | --classifier sbmil
dd                 | --classifier dd
em-dd              | --classifier em-dd
METHODS
