#!/usr/bin/env bash
# The main job, runnable anywhere: builds gpuprof (release) and runs `gpuprof demo` on
# the built-in LLM-shaped cudarc workload: the report, the roofline (SVG, CSV, JSON)
# and a Perfetto trace, in target/demo-session/. With an NVIDIA GPU (gpuprof doctor
# finds a usable driver and CUPTI) it runs there; without one, the same unmodified
# workload runs on the simulated CUDA stack (tests/sim: driver, CUPTI, cuBLAS,
# cuBLASLt), through the real injection path.
#   scripts/demo.sh [--sim|--gpu] [workload options, e.g. --layers 4 --decode-steps 16]
# GPUPROF_DEMO_PROFILE=debug uses the debug build instead (the test command has made
# it already; the code is the same).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=()
case "${1:-}" in
--sim | --gpu) mode=("$1"); shift ;;
esac

profile=${GPUPROF_DEMO_PROFILE:-release}
case "$profile" in
release) echo "== building (release)" >&2; cargo build --release --quiet ;;
# The test command's own build (--workspace --all-targets): with any other target
# set Cargo unifies features differently and rebuilds the workspace (a minute on 2 cores).
debug) echo "== building (debug)" >&2; cargo build --quiet --workspace --all-targets ;;
*) echo "demo.sh: GPUPROF_DEMO_PROFILE=$profile is not release or debug" >&2; exit 2 ;;
esac
# NVIDIA's NVTX library, which the workload loads (and, on the simulated stack, the
# route of its NVTX ranges into CUPTI), and NVIDIA's CUPTI 13.1, whose Profiler Host
# API the simulated CUPTI answers from: about 11 MB of wheels, nothing else.
python3 scripts/nvidia-wheels.py fetch-extras libnvtx3interop cupti_host >/dev/null

session=$PWD/target/demo-session
rm -rf "$session"
"target/$profile/gpuprof" demo "${mode[@]}" -o "$session" -- "$@"
