#!/usr/bin/env bash
# The box-kernel Gram before and after the second wave's point-in-box test (#18), side by
# side in one run: builds `mil` at BASELINE (default 8d4429c, the last commit with the
# first wave's estimator) in a temporary worktree and at the working tree, then times the
# same commands with each (user + system CPU seconds, GNU time). Usage:
#   bash benches/box_kernel_before_after.sh [BASELINE]
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=${1:-8d4429c}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" "$baseline" >/dev/null
(cd "$work/src" && CARGO_TARGET_DIR="$work/target" cargo build --release -q -p mil-toolkit --bin mil)
cargo build --release -q -p mil-toolkit --bin mil
before="$work/target/release/mil"
after=target/release/mil
run() {
    local label=$1 bin=$2; shift 2
    /usr/bin/time -f "%U %S" -o "$work/time" "$bin" "$@" --quiet >/dev/null 2>&1
    awk -v l="$label" '{ printf "%s %.2f\n", l, $1 + $2 }' "$work/time"
}
printf '| job | before (CPU s) | after (CPU s) | ratio |\n|---|---|---|---|\n'
while read -r label args; do
    # shellcheck disable=SC2086
    b=$(run "$label" "$before" $args | awk '{print $2}')
    # shellcheck disable=SC2086
    a=$(run "$label" "$after" $args | awk '{print $2}')
    awk -v l="$label" -v b="$b" -v a="$a" 'BEGIN { printf "| %s | %.2f | %.2f | %.1f× |\n", l, b, a, b / a }'
done <<'JOBS'
musk1-kand gram musk1 --kernel kand
musk1-kandor gram musk1 --kernel kandor
musk1-kmin gram musk1 --kernel kmin
musk2-kand gram musk2 --kernel kand
musk1-kand-paper gram musk1 --kernel kand --estimator paper
JOBS
uptime
