#!/usr/bin/env bash
# The main job, runnable anywhere: `gpuprof record` on the built-in LLM-shaped cudarc
# workload, then the report and a Perfetto trace. With an NVIDIA GPU (gpuprof doctor
# finds a usable driver and CUPTI) it runs there; without one, the same unmodified
# workload runs on the simulated CUDA stack (tests/sim: driver, CUPTI, cuBLAS,
# cuBLASLt), through the real injection path.
#   scripts/demo.sh [--sim] [workload options, e.g. --layers 4 --decode-steps 16]
set -euo pipefail
cd "$(dirname "$0")/.."

use_sim=auto
if [ "${1:-}" = "--sim" ]; then use_sim=yes; shift; fi

echo "== building (release)" >&2
cargo build --release --quiet
out=target/release
lib=$PWD/$out/libgpuprof.so

if [ "$use_sim" = auto ] && "$out/gpuprof" doctor >/dev/null 2>&1; then
    use_sim=no
fi

session=$PWD/target/demo-session
record() {
    rm -rf "$session"
    echo "== gpuprof record -o $session -- cudarc-llm $*" >&2
    GPUPROF_LIB=$lib "$out/gpuprof" record -o "$session" -- "$out/cudarc-llm" "$@"
    "$out/gpuprof" trace "$session" -o "$session/trace.json"
    echo "== the session: $session (gpuprof report $session --format csv|json); trace: $session/trace.json (ui.perfetto.dev)" >&2
}

if [ "$use_sim" = no ]; then
    echo "== a GPU and a usable CUPTI are here: profiling the workload on the real GPU" >&2
    record "$@"
    exit $?
fi

echo "== no usable GPU here: the workload runs on the simulated H100 (tests/sim)" >&2
python3 scripts/nvidia-wheels.py fetch-extras >/dev/null
nvtx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["libnvtx3interop"])' target/nvidia/extras.json)
sim=$PWD/$out/demo-sim
rm -rf "$sim" && mkdir -p "$sim"
ln -s "$PWD/$out/libcuda.so" "$sim/libcuda.so.1"
ln -s "$PWD/$out/libcuda.so" "$sim/libcuda.so"
ln -s "$PWD/$out/libcupti.so" "$sim/libcupti.so.13"
for l in libcublas libcublasLt; do
    ln -s "$PWD/$out/$l.so" "$sim/$l.so"
    ln -s "$PWD/$out/$l.so" "$sim/$l.so.12"
done
ln -s "$nvtx" "$sim/libnvToolsExt.so"

export LD_LIBRARY_PATH=$sim GPUPROF_CUPTI_LIB=$sim/libcupti.so.13
echo "== gpuprof doctor (on the simulated stack)" >&2
"$out/gpuprof" doctor
record "$@"
