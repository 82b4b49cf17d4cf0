#!/usr/bin/env bash
# Regenerates the "On a Cortex-M4" block of docs/guide/device.md from a firmware run: every
# summary line `tests/firmware.rs` prints (one per model kind and encoding, instructions
# per instance and per bag under QEMU's Cortex-M4 with -icount, counted by SysTick), the
# musk1 Q15 model's breakdown (projection stage, quantising from f32 and from i16, stack,
# parse), and the board example's section sizes for the Cortex-M4F and the Cortex-M0
# (`llvm-size -A` of the release builds the test makes). Nothing in the block is typed
# by hand.
#
# Usage: benches/firmware_readme.sh           prints the block
#        benches/firmware_readme.sh --write   also replaces it in docs/guide/device.md
#                                             (between the `firmware:begin` and
#                                             `firmware:end` markers)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cargo test --release --quiet --test firmware -- --nocapture --test-threads 1 > "$out"
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
size="$sysroot/lib/rustlib/$host/bin/llvm-size"
[ -x "$size" ] || size=llvm-size
section() { # ELF section
    "$size" -A "$1" | awk -v s="$2" '$1 == s { print $2 }'
}
board() {
    local elf="examples/board/target/$1/release/mil-board-example"
    printf 'board example, %s: .text %s B, .rodata %s B, .bss %s B\n' "$1" \
        "$(section "$elf" .text)" "$(section "$elf" .rodata)" "$(section "$elf" .bss)"
}
block=$(
    echo '```'
    sed -E 's/^(test [a-z_0-9]+ \.\.\. |[.]+)//' "$out" |
        grep -E '^(firmware:|input steps|classify:|stack |model bytes)'
    board thumbv7em-none-eabihf
    board thumbv6m-none-eabi
    echo '```'
)
echo "$block"
if [ "${1:-}" = "--write" ]; then
    python3 - "$block" <<'PY'
import sys
block = sys.argv[1]
page = "docs/guide/device.md"
text = open(page).read()
begin, end = "<!-- firmware:begin -->", "<!-- firmware:end -->"
i, j = text.index(begin), text.index(end)
text = text[: i + len(begin)] + "\n" + block + "\n" + text[j:]
open(page, "w").write(text)
PY
    echo "docs/guide/device.md updated" >&2
fi
