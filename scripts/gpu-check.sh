#!/usr/bin/env bash
# The GPU check: one prepared run on a machine with an NVIDIA GPU and no Rust, which
# settles the facts docs/ARCHITECTURE.md lists as "unchecked: needs a GPU". See --help.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'EOF'
usage: scripts/gpu-check.sh [--prebuilt DIR] [--out DIR] [--only STEP,...] [--sim]

Runs, each under its own time limit and in this order, and logs to stdout with CLOCK_REALTIME stamps:

  env            nvidia-smi, the CUDA libraries found on the machine, PyTorch's CUDA
  doctor         gpuprof doctor
  default-graph  gpuprof record of cudarc-llm --graph-decode --decode-steps 200 with no
                 GPUPROF_* settings: eager prefill measured per kernel, then the first
                 graph launch hands the GPU over to PM sampling (report: a second plan,
                 mode sampling; decode shapes with bytes_source sampled)
  torch-graph    gpuprof record of tests/workloads/python/torch_llm.py (decode as a
                 CUDA graph), default settings
  smoke-eager    scripts/gpu-smoke.sh (every launch measured, the groups in turn); its
                 FLOP check fails on decode GEMVs at the default 10% (tile padding:
                 gpu-smoke.sh --help), which the log shows
  default-eager  as default-graph with --decode-steps 16, decode launched eagerly
  sampling       GPUPROF_COUNTERS=sampling, --graph-decode --decode-steps 200
  torch-eager    as torch-graph with --eager-decode
  torch-inject   torch_llm.py under CUDA_INJECTION64_PATH=libgpuprof.so alone (no
                 gpuprof record: the collector the first process starts writes the
                 session), default settings
  ncu            Nsight Compute's DRAM bytes, tensor ops and times of the smoke-eager
                 workload, for comparison with gpuprof's

OUT/summary.txt ends it: one "step NAME: rc N" line per step, then one "fact NAME:
..." line per fact docs/ARCHITECTURE.md lists as unchecked (what the sessions show:
counter plans and their modes, kernels with and without timestamps, drops).

Every recorded session, its `report --format json` and its text report land in
OUT (default target/gpu-check)/STEP/. Steps do not stop each other: the check goes on
after a failure and ends with one "step NAME: rc N" line per step.

--prebuilt DIR   gpuprof, libgpuprof.so, cudarc-llm and libnvToolsExt.so (NVIDIA's
                 libnvtx3interop) built elsewhere (default target/release)
--only LIST      run only these steps (comma-separated)
--sim            rehearse on the simulated CUDA stack (tests/sim, built with the
                 workspace: target/release), without a GPU: the steps that need
                 nvidia-smi, PyTorch or Nsight Compute are skipped
EOF
}

bin=target/release
out=target/gpu-check
only=
sim=no
while [ $# -gt 0 ]; do
    case "$1" in
        --prebuilt) bin=$2; shift ;;
        --out) out=$2; shift ;;
        --only) only=,$2,; shift ;;
        --sim) sim=yes ;;
        -h | --help) usage; exit 0 ;;
        *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
bin=$(cd "$bin" && pwd) || exit 2
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
gpuprof=$bin/gpuprof
llm=$bin/cudarc-llm
export GPUPROF_LIB=$bin/libgpuprof.so
summary=()

stamp() { date +%s%N; }

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, logs its stamps and rc.
step() {
    local name=$1 secs=$2 rc
    shift 2
    if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then
        return 0
    fi
    mkdir -p "$out/$name"
    echo "=== step $name: start $(stamp)"
    # bash -c: the command may be one of this script's functions (exported below).
    timeout -k 5 "$secs" bash -c '"$@"' _ "$@"
    rc=$?
    echo "=== step $name: end $(stamp) rc $rc"
    summary+=("step $name: rc $rc")
}

# record NAME ARGS...: gpuprof record into OUT/NAME/session, then its reports.
record() {
    local name=$1 rc
    shift
    rm -rf "$out/$name/session"
    "$gpuprof" record -o "$out/$name/session" -- "$@" >"$out/$name/record.out" 2>&1
    rc=$?
    tail -n 40 "$out/$name/record.out"
    "$gpuprof" report "$out/$name/session" --format json >"$out/$name/report.json" 2>&1
    "$gpuprof" report "$out/$name/session" >"$out/$name/report.txt" 2>&1
    head -c 20000 "$out/$name/report.txt"
    return "$rc"
}

find_libs() {
    local libs=$out/libs
    mkdir -p "$libs"
    echo "--- CUDA libraries on this machine"
    find /usr/local /opt /usr/lib -xdev \( -name 'libcupti.so*' -o -name 'libcublas.so*' \
        -o -name 'libcublasLt.so*' -o -name 'libcudart.so*' -o -name 'libnvrtc.so*' -o -name 'libnvToolsExt.so*' \
        -o -name 'libnvtx3interop.so*' -o -name 'libcuda.so*' -o -name 'libnvperf_host.so' \) \
        2>/dev/null | sort
    local name found dirs=
    for name in cublas cublasLt cudart nvrtc; do
        found=$(find /usr/local /opt /usr/lib -xdev -name "lib$name.so.13*" 2>/dev/null | sort | head -n1)
        [ -n "$found" ] || found=$(find /usr/local /opt /usr/lib -xdev -name "lib$name.so.12*" 2>/dev/null | sort | head -n1)
        if [ -n "$found" ]; then
            ln -sfn "$found" "$libs/lib$name.so"
            dirs=$dirs:$(dirname "$found")
            echo "--- lib$name.so -> $found"
        fi
    done
    [ -f "$bin/libnvToolsExt.so" ] && ln -sfn "$bin/libnvToolsExt.so" "$libs/libnvToolsExt.so"
    export LD_LIBRARY_PATH=$libs$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "--- LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

show_env() {
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,power.limit --format=csv
    nvidia-smi -q -d CLOCK | head -n 40
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
    uname -r
}

ncu_bytes() {
    local ncu
    ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n1)
    [ -n "$ncu" ] || { echo "no ncu"; return 1; }
    "$ncu" --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_active.avg,sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum,sm__ops_path_tensor_op_hgmma_src_fp16.sum,sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum \
        --log-file "$out/ncu/ncu.csv" "$llm"
    local rc=$?
    head -c 4000 "$out/ncu/ncu.csv"
    return "$rc"
}

# torch_inject: the PyTorch program with libgpuprof.so injected by the driver alone.
torch_inject() {
    rm -rf "$out/torch-inject/session"
    CUDA_INJECTION64_PATH=$GPUPROF_LIB GPUPROF_OUT=$out/torch-inject/session \
        python3 tests/workloads/python/torch_llm.py >"$out/torch-inject/run.out" 2>&1
    local rc=$?
    tail -n 20 "$out/torch-inject/run.out"
    # The collector the program started finishes the session after it exits.
    for _ in $(seq 100); do [ -d "$out/torch-inject/session/parts" ] && break; sleep 0.2; done
    "$gpuprof" report "$out/torch-inject/session" --format json >"$out/torch-inject/report.json" 2>&1
    return "$rc"
}

if [ "$sim" = yes ]; then
    # The simulated stack of target/release as the driver, CUPTI and cuBLAS.
    . scripts/sim-stack.sh
    sim_stack "$out/sim" "$(cd target/release && pwd)"
    export LD_LIBRARY_PATH=$out/sim GPUPROF_CUPTI_LIB=$out/sim/libcupti.so.13
else
    find_libs
fi
export out bin gpuprof llm
export -f record show_env ncu_bytes stamp torch_inject
# In order of what matters most, should the time run out.
if [ "$sim" = no ]; then
    step env 30 show_env
fi
step doctor 30 "$gpuprof" doctor
step default-graph 60 record default-graph "$llm" --graph-decode --decode-steps 200
if [ "$sim" = no ]; then
    step torch-graph 90 record torch-graph python3 tests/workloads/python/torch_llm.py
fi
if [ "$sim" = yes ]; then
    step smoke-eager 90 scripts/gpu-smoke.sh --sim --prebuilt "$bin" --work "$out/smoke-eager" --keep
else
    step smoke-eager 90 scripts/gpu-smoke.sh --prebuilt "$bin" --work "$out/smoke-eager" --keep
fi
step default-eager 60 record default-eager "$llm" --decode-steps 16
GPUPROF_COUNTERS=sampling step sampling 60 record sampling "$llm" --graph-decode --decode-steps 200
if [ "$sim" = no ]; then
    step torch-eager 90 record torch-eager python3 tests/workloads/python/torch_llm.py --eager-decode
    step torch-inject 120 torch_inject
    step ncu 90 ncu_bytes
fi
{
    printf '%s\n' "${summary[@]}"
    python3 scripts/gpu_facts.py "$out"
} | tee "$out/summary.txt"
