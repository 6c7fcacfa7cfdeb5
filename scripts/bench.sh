#!/usr/bin/env bash
# gpuprof's benchmarks, one command, ratios measured in one run (release build):
#  1. pipeline: records per second from a batch to the session file, vs memcpy;
#  2. launch: added cost per kernel launch on the application's thread (wall and
#     thread CPU time), on the simulated stack: unprofiled, under a do-nothing CUPTI
#     tool with libgpuprof.so's subscriptions (scripts/bench/baseline-tool), and
#     under `gpuprof record`.
#   scripts/bench.sh [--launches N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --workspace
python3 scripts/nvidia-wheels.py fetch-extras >/dev/null
rel=$PWD/target/release
sim=$rel/bench-sim
rm -rf "$sim" && mkdir -p "$sim"
ln -s "$rel/libcuda.so" "$sim/libcuda.so.1"
ln -s "$rel/libcupti.so" "$sim/libcupti.so.13"
cc -O2 -o "$rel/launch_flood" tests/c/launch_flood.c -ldl

"$rel/gpuprof-bench" pipeline
"$rel/gpuprof-bench" launch --flood "$rel/launch_flood" --sim-dir "$sim" \
    --lib "$rel/libgpuprof.so" --baseline "$rel/libgpuprof_baseline_tool.so" \
    --gpuprof "$rel/gpuprof" "$@"
rm -rf "$sim"
