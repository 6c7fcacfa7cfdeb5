#!/usr/bin/env bash
# Regenerates cupti-sys/src/generated/ from NVIDIA's headers, byte-for-byte.
# Downloads the pinned wheels (scripts/nvidia-wheels.py) and needs libclang for
# bindgen (Debian: libclang-dev; scripts/test.sh installs it when run as root).
#   scripts/regen-bindings.sh           regenerate in place
#   scripts/regen-bindings.sh --check   generate into a temporary directory and fail
#                                       if it differs from the committed files
# The generator runs in the debug profile, built with the workspace's features: the test
# command's `cargo build --workspace` has built it already, and it takes half a minute to
# run either way.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libclang.sh
case "${1:-}" in
    ""|--check) ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
python3 scripts/nvidia-wheels.py fetch >/dev/null
if ! have_libclang; then
    echo "error: bindgen needs libclang; install libclang-dev" >&2
    exit 1
fi
generated=cupti-sys/src/generated
cargo build --quiet --workspace --bin gen-bindings
gen=${CARGO_TARGET_DIR:-target}/debug/gen-bindings
if [ "${1:-}" != "--check" ]; then
    "$gen"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/generated" 2>/dev/null
if ! diff -r -u "$generated" "$tmp/generated" >"$tmp/diff"; then
    head -n 60 "$tmp/diff" >&2
    echo "error: $generated differs from what the pinned headers produce (diff above, first 60 lines); run scripts/regen-bindings.sh and commit" >&2
    exit 1
fi
untracked=$(git ls-files --others --exclude-standard -- "$generated")
if [ -n "$untracked" ]; then
    echo "error: generated files not committed: $untracked" >&2
    exit 1
fi
echo "bindings: $generated matches the pinned headers" >&2
