#!/usr/bin/env bash
# Regenerates cupti-sys/src/generated/ from NVIDIA's headers, byte-for-byte.
# Downloads the pinned wheels (scripts/nvidia-wheels.py) and needs libclang
# (Debian: libclang-dev); installs it with apt-get when run as root without it.
#   scripts/regen-bindings.sh           regenerate
#   scripts/regen-bindings.sh --check   regenerate and fail if the committed files differ
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/nvidia-wheels.py fetch >/dev/null
if ! ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 && ! ldconfig -p | grep -q 'libclang[-.0-9]*\.so'; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing libclang-dev for bindgen" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev >/dev/null
    else
        echo "error: bindgen needs libclang; install libclang-dev" >&2
        exit 1
    fi
fi
cargo run --quiet --release -p gen-bindings
if [ "${1:-}" = "--check" ]; then
    if ! git diff --exit-code --stat -- cupti-sys/src/generated; then
        echo "error: cupti-sys/src/generated differs from what the pinned headers produce; run scripts/regen-bindings.sh and commit" >&2
        exit 1
    fi
    untracked=$(git ls-files --others --exclude-standard -- cupti-sys/src/generated)
    if [ -n "$untracked" ]; then
        echo "error: generated files not committed: $untracked" >&2
        exit 1
    fi
fi
