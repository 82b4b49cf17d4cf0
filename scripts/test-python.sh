#!/usr/bin/env bash
# The Python package's tests, run against its wheel installed the way a user installs it:
# builds the wheel and the sdist (scripts/build-wheel.sh), installs the wheel into a fresh
# venv on a PATH without cargo or rustc, and runs python/tests with that installed `miltk`.
# The parity tests compare with the `mil` program, target/release/mil (built by
# `cargo build --release -p mil-toolkit`, or by the Rust tests of scripts/test-all.sh).
# Then `mypy --strict` checks the installed package's type hints and the Python examples
# of the READMEs and of the guide's Python page, as a user's type checker sees them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build-wheel.sh target/wheels
wheel=$(ls target/wheels/mil_toolkit-*.whl)

echo "== Python: install the wheel into a fresh venv, without Rust"
venv=target/pytest-venv
rm -rf "$venv"
if ! python3 -m venv "$venv"; then
    # Debian's own python3 keeps venv in a separate package.
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
fi
# Only the venv and the system's directories: the Rust toolchain (~/.cargo/bin) is left out.
export PATH="$PWD/$venv/bin:/usr/bin:/bin"
for tool in cargo rustc; do
    if "$tool" --version >/dev/null 2>&1; then
        echo "$tool is still on PATH ($(command -v "$tool")): the wheel must install without Rust" >&2
        exit 1
    fi
done
# Binaries only: nothing of this install may be compiled. mypy is pinned so that its
# verdict does not change under the tests.
python -m pip install -q --disable-pip-version-check --only-binary :all: "$wheel" pytest \
    "mypy==2.4.1"

echo "== Python: tests of the installed package"
# miltk is imported, and checked to come from the venv, before pytest starts: every
# `import miltk` of the tests then gets this module, never python/miltk of the source tree.
MIL_BIN="$PWD/target/release/mil" python -c '
import pathlib, sys
import miltk, pytest
where = pathlib.Path(miltk.__file__).resolve()
print(f"miltk {where}")
if not where.is_relative_to(pathlib.Path(sys.prefix).resolve()):
    sys.exit(f"miltk was imported from {where}, not from the venv {sys.prefix}")
sys.exit(pytest.main(sys.argv[1:]))
' -q python/tests

echo "== Python: mypy --strict on the installed package and on the documented examples"
# From outside the source tree, so that `miltk` is the installed package (with its
# py.typed and _native.pyi), never python/miltk.
scripts_dir=$(mktemp -d)
trap 'rm -rf "$scripts_dir"' EXIT
python python/tests/test_readme.py "$scripts_dir" >/dev/null
config="$PWD/python/pyproject.toml"
(
    cd "$scripts_dir"
    python -m mypy --strict --config-file "$config" -p miltk
    python -m mypy --strict --config-file "$config" ./*.py
)
