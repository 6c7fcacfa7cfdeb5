#!/usr/bin/env bash
# The whole test suite, on a fresh machine, with nothing installed by hand:
# fetches NVIDIA's pinned wheels (cached under target/nvidia), checks formatting,
# lints, runs every test, and checks the committed bindings regenerate byte-for-byte.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

step "NVIDIA wheels (headers and real libraries for the offline tests)"
python3 scripts/nvidia-wheels.py fetch

step "cargo fmt --check"
cargo fmt --all -- --check

step "build"
cargo build --workspace --all-targets --locked

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked

step "bindings regenerate byte-for-byte"
scripts/regen-bindings.sh --check
