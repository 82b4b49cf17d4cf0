#!/usr/bin/env bash
# Every test of the project on a fresh machine: checks that no file outside CHANGELOG.md
# tells history (scripts/check-words.py), installs what the tests need (the Cortex-M4
# target; QEMU, Slurm and Chromium by scripts/test-packages.sh), then runs the Rust tests
# (with cargo-nextest when installed) and the doctests (the README's examples among them),
# the guide site's checks, and the Python package's tests against its wheel installed
# without Rust (scripts/test-python.sh; the README's Python examples among them). The
# README's test command; `.ci/run` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== words: the product describes itself; history only in CHANGELOG.md"
python3 scripts/check-words.py --self-test
python3 scripts/check-words.py

echo "== prerequisites"
# tests/firmware.rs builds tests/qemu for the Cortex-M4 and runs it under QEMU, and the
# board example (examples/board) for the Cortex-M4 and the Cortex-M0.
rustup target add thumbv7em-none-eabihf thumbv6m-none-eabi >/dev/null
# tests/firmware.rs disassembles the firmware to check for the DSP instructions.
rustup component add llvm-tools >/dev/null
# QEMU, Slurm and Chromium (apt-get as root).
bash scripts/test-packages.sh

echo "== Rust: unit, end-to-end and documentation tests"
# With cargo-nextest, the tests of all binaries run side by side (.config/nextest.toml);
# without it, cargo test runs one binary after another. Same tests, same verdicts.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --release
    cargo test --workspace --release --doc
else
    cargo test --workspace --release
fi

echo "== the guide site: strict build, every page in a headless browser, and the check's self-test"
bash scripts/check-docs.sh
bash scripts/check-docs.sh --self-test

if [ -f python/pyproject.toml ]; then
    echo "== Python: the wheel, installed without Rust, and the package's tests"
    scripts/test-python.sh
fi
