#!/usr/bin/env bash
# Builds everything a release publishes into dist/:
# - the Python package: its wheel (abi3, manylinux_2_17, installs without Rust) and its
#   sdist, by scripts/build-wheel.sh;
# - the crates mil-core and mil-toolkit, as `cargo package` makes and checks them;
# - `mil`, the command-line program, as one static x86_64 Linux binary (musl): it runs
#   without a Rust toolchain and whatever the machine's glibc;
# - SHA256SUMS of these files.
# Everything is built and checked in target/dist-staging first; dist/ is then replaced
# whole, so a failed run leaves the previous dist/ as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

stage=target/dist-staging
musl=x86_64-unknown-linux-musl
rm -rf "$stage"
mkdir -p "$stage"
version=$(cargo pkgid -p mil-toolkit | sed 's/.*[#@]//')

echo "== Python wheel and sdist"
scripts/build-wheel.sh "$stage"
for file in "$stage/mil_toolkit-$version-"*.whl "$stage/mil_toolkit-$version.tar.gz"; do
    [ -f "$file" ] || { echo "no Python package of version $version in $stage" >&2; exit 1; }
done

echo "== crates"
# Both in one call: cargo builds mil-toolkit against the packaged mil-core, not crates.io's.
# Its own target dir, as these debug builds share nothing with the release builds.
cargo package --locked -p mil-core -p mil-toolkit --target-dir target/crates
cp "target/crates/package/mil-core-$version.crate" \
    "target/crates/package/mil-toolkit-$version.crate" "$stage/"

echo "== mil, static ($musl)"
rustup target add "$musl" >/dev/null
# With the attention network's training; the shipped binary stripped of its symbols.
cargo build --locked --release -p mil-toolkit --features attention --bin mil --target "$musl" \
    --config profile.release.strip=true
cp "target/$musl/release/mil" "$stage/mil"
kind=$(file -b "$stage/mil")
echo "$kind"
if ! grep -Eq 'statically linked|static-pie linked' <<<"$kind"; then
    echo "$stage/mil is not statically linked" >&2
    exit 1
fi
said=$(env -i "$stage/mil" --version)
if [ "$said" != "mil $version" ]; then
    echo "$stage/mil --version says '$said', expected 'mil $version'" >&2
    exit 1
fi
info=$(env -i "$stage/mil" info musk1)
echo "$info"
if ! grep -q '^musk1: .* bags, ' <<<"$info"; then
    echo "$stage/mil info musk1 does not describe musk1" >&2
    exit 1
fi

echo "== SHA256SUMS"
(cd "$stage" && sha256sum -- * >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)

rm -rf target/dist-previous
if [ -e dist ]; then mv dist target/dist-previous; fi
mv "$stage" dist
rm -rf target/dist-previous

echo "== dist/"
for file in dist/*; do
    printf '%12s  %6s  %s\n' "$(stat -c %s "$file")" "$(du -h "$file" | cut -f1)" "$file"
done
