#!/usr/bin/env bash
# The whole pipeline on a real NVIDIA GPU, with its invariants checked: release build,
# `gpuprof doctor`, `gpuprof record` of the cudarc-llm workload, `gpuprof report
# --format json`, then scripts/smoke_check.py on the report and the workload's summary
# line. `scripts/gpu-smoke.sh --help` says what each invariant guards against.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'EOF'
usage: scripts/gpu-smoke.sh [--sim] [--prebuilt DIR] [--work DIR] [--tolerance PCT] [--keep]
                           [-- WORKLOAD ARGS...]

Runs gpuprof end to end on this machine's NVIDIA GPU and checks what must hold for any
healthy run:

  1. cargo build --release
  2. target/release/gpuprof doctor: a usable driver and CUPTI, else it stops here
     (exit 1) with doctor's explanation
  3. gpuprof record -o target/gpu-smoke/session -- target/release/cudarc-llm ARGS
     (the LLM-shaped cudarc workload: prefill and decode layers, cuBLAS / cuBLASLt
     GEMMs, NVTX ranges "prefill" and "decode"; it prints
     "cudarc-llm: ok: L layers, prompt P, D decode steps: N kernel launches, G GEMMs")
  4. gpuprof report --format json > target/gpu-smoke/report.json
  5. scripts/smoke_check.py on that report and the workload's line

Options:
  --sim            run on the simulated CUDA stack (tests/sim: driver, CUPTI, cuBLAS,
                   cuBLASLt, a simulated H100), set up as scripts/demo.sh does, so the
                   script itself can be tried on a machine without a GPU
  --prebuilt DIR   take gpuprof, libgpuprof.so and cudarc-llm from DIR instead of
                   building (for a GPU machine without Rust: scripts/gpu-check.sh)
  --work DIR       where the session, record.out and report.json go (default
                   target/gpu-smoke)
  --tolerance PCT  largest |hw - model| / model allowed for GEMM FLOPs (default 10)
  --keep           keep the session directory target/gpu-smoke/session (it is removed
                   after a passing run; a failing run always keeps it)
  -- ARGS          passed to cudarc-llm: --layers --hidden --ffn --heads --vocab
                   --prompt --decode-steps (defaults 2, 1024, 2816, 8, 32000, 128, 4)
  -h, --help       this text

Invariants (each failure is one "FAIL <invariant>: ... expected X, got Y" line; exit 1
if any fails, else a "PASS" line and exit 0):

  no-drops      every drop source (cupti, channel, ring) reports 0 records and every
                process's stream is complete. Guards against silent loss: a too small
                CUPTI buffer pool, channel or ring, a writer that did not drain at
                exit. Drops also make every count below unreliable.
  kernel-count  the workload launches exactly N kernels of its own and makes G GEMM
                calls, each launching at least one cuBLAS kernel (more with split-K):
                kernels >= N + G; GEMM calls seen (GEMM shape rollup `calls`) == G;
                kernels outside GEMM calls == N; no GEMM record left unjoined. Guards
                against lost or doubled kernel records, GEMM hooks that miss calls and
                GEMM shapes tied to the wrong kernels.
  nvtx-ranges   "prefill" once and "decode" D times, each with kernels inside. Guards
                against NVTX not reaching CUPTI and kernels not attributed to ranges.
  gemm-flops    for every GEMM kernel row with both model FLOPs (2*M*N*K*batch from
                the shapes) and hardware FLOPs (tensor-pipe and FP counters):
                |hw - model| / model <= tolerance (default 10%). Guards against wrong
                shapes, wrong counter weights and counters joined to the wrong launch.
                Why a tolerance: tensor-pipe counters count the tiles the hardware
                computes, padded when a dimension is not a multiple of the tile, so
                hardware FLOPs exceed the model on small or odd shapes (a decode GEMM
                with N = 1 on tensor cores by up to the tile width); epilogue
                arithmetic adds a little. Raise --tolerance for such shapes.
  counters      every kernel has counters from at least one launch (kernel mode), no
                counter status turned counters off, no counter record unjoined.
                Skipped when GPUPROF_COUNTERS is off or sampling.
  mfu-mbu       every MFU and MBU (per kernel, GEMM shape, family, NVTX range, run)
                <= 100% + 5 percentage points of slack (clock boost above the rated
                peak, counter rounding). A value above means a wrong peak or FLOPs /
                bytes joined to the wrong kernel.

Counter settings: unless set in the environment, the run uses GPUPROF_COUNTER_LAUNCHES=0
and GPUPROF_COUNTER_BUDGET=100, so every launch of every kernel is measured, successive
launches rotating through the pass groups, whatever the time it takes. Not kernel
replay (GPUPROF_REPLAY=kernel): CUPTI gives a kernel it replays no timestamps (seen on
H100 and H200 with CUPTI 13.0), so the kernel table would read 0 µs. A kernel's
hardware FLOPs are then the mean of the launches that measured them times all its
launches, which is off by more than the tolerance when one kernel runs several GEMM
shapes or a decode GEMM's N is far below the tensor tile. GPUPROF_COUNTERS (default
kernel) is passed on as set.

Needs on a GPU machine: the NVIDIA driver, a supported CUPTI (see gpuprof doctor),
cuBLAS 12 (libcublas.so, libcublasLt.so) on the loader path. NVTX comes from
NVIDIA's nvidia-nvtx-cu12 wheel (fetched into target/nvidia by
scripts/nvidia-wheels.py fetch-extras) unless libnvToolsExt.so is already found.
Files: target/gpu-smoke/{session/, record.out, report.json}.
EOF
}

use_sim=no
tolerance=10
keep=no
prebuilt=
work=$PWD/target/gpu-smoke
workload_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --sim) use_sim=yes ;;
        --tolerance)
            [ $# -ge 2 ] || { echo "gpu-smoke: --tolerance needs a value (percent)" >&2; exit 2; }
            tolerance=$2
            shift
            ;;
        --tolerance=*) tolerance=${1#--tolerance=} ;;
        --keep) keep=yes ;;
        --prebuilt | --work)
            [ $# -ge 2 ] || { echo "gpu-smoke: $1 needs a directory" >&2; exit 2; }
            if [ "$1" = --prebuilt ]; then prebuilt=$2; else work=$2; fi
            shift
            ;;
        -h | --help) usage; exit 0 ;;
        --) shift; workload_args=("$@"); break ;;
        *) echo "gpu-smoke: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if ! [[ "$tolerance" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    echo "gpu-smoke: --tolerance needs a non-negative number (percent), not '$tolerance'" >&2
    exit 2
fi
counters=${GPUPROF_COUNTERS:-kernel}
case "$counters" in
    kernel | sampling | off) ;;
    *) echo "gpu-smoke: GPUPROF_COUNTERS=$counters is not kernel, sampling or off" >&2; exit 2 ;;
esac

if [ -n "$prebuilt" ]; then
    out=$(cd "$prebuilt" && pwd)
    for f in gpuprof libgpuprof.so cudarc-llm; do
        [ -f "$out/$f" ] || { echo "gpu-smoke: --prebuilt $prebuilt has no $f" >&2; exit 2; }
    done
else
    echo "== building (release)" >&2
    cargo build --release --quiet
    out=$PWD/target/release
fi
session=$work/session
mkdir -p "$work"

# NVIDIA's NVTX library, for the workload's NVTX ranges.
nvtx_lib() {
    python3 scripts/nvidia-wheels.py fetch-extras libnvtx3interop >/dev/null
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["libnvtx3interop"])' \
        "$(python3 scripts/nvidia-wheels.py path)/extras.json"
}

if [ "$use_sim" = yes ]; then
    echo "== --sim: the simulated CUDA stack (tests/sim, a simulated H100) instead of a GPU" >&2
    sim=$work/sim
    . scripts/sim-stack.sh
    sim_stack "$sim" "$out"
    export LD_LIBRARY_PATH=$sim GPUPROF_CUPTI_LIB=$sim/libcupti.so.13
fi

echo "== gpuprof doctor" >&2
if ! "$out/gpuprof" doctor; then
    if [ "$use_sim" = yes ]; then
        echo "gpu-smoke: FAIL doctor: expected a usable driver and CUPTI on the simulated stack, got none (see above)" >&2
    else
        echo "gpu-smoke: FAIL doctor: expected a usable NVIDIA driver and CUPTI, got none (see above); without a GPU, --sim runs the same pipeline on the simulated stack" >&2
    fi
    exit 1
fi

on_path=$(IFS=:; for d in ${LD_LIBRARY_PATH:-}; do ls "$d"/libnvToolsExt.so* 2>/dev/null || true; done)
if [ "$use_sim" = no ] && [ -z "$on_path" ] && ! ldconfig -p 2>/dev/null | grep 'libnvToolsExt\.so' >/dev/null; then
    nvtx=$(nvtx_lib)
    mkdir -p "$work/nvtx"
    ln -sfn "$nvtx" "$work/nvtx/libnvToolsExt.so"
    export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$work/nvtx
    echo "== NVTX: $nvtx (no libnvToolsExt.so on the loader path)" >&2
fi

export GPUPROF_REPLAY=${GPUPROF_REPLAY:-none}
export GPUPROF_COUNTER_LAUNCHES=${GPUPROF_COUNTER_LAUNCHES:-0}
export GPUPROF_COUNTER_BUDGET=${GPUPROF_COUNTER_BUDGET:-100}
rm -rf "$session"
echo "== gpuprof record -o $session -- cudarc-llm${workload_args[*]+ ${workload_args[*]}} (GPUPROF_COUNTERS=$counters GPUPROF_REPLAY=$GPUPROF_REPLAY GPUPROF_COUNTER_LAUNCHES=$GPUPROF_COUNTER_LAUNCHES GPUPROF_COUNTER_BUDGET=$GPUPROF_COUNTER_BUDGET)" >&2
status=0
GPUPROF_LIB=$out/libgpuprof.so "$out/gpuprof" record -o "$session" -- \
    "$out/cudarc-llm" ${workload_args[@]+"${workload_args[@]}"} >"$work/record.out" || status=$?
grep -m1 '^cudarc-llm: ' "$work/record.out" >&2 || true
if [ "$status" -ne 0 ]; then
    cat "$work/record.out" >&2
    echo "gpu-smoke: FAIL record: expected exit status 0 from gpuprof record -- cudarc-llm, got $status (session kept in $session)" >&2
    exit 1
fi

echo "== gpuprof report $session --format json > $work/report.json" >&2
if ! "$out/gpuprof" report "$session" --format json >"$work/report.json"; then
    echo "gpu-smoke: FAIL report: expected gpuprof report to read the session, it failed (session kept in $session)" >&2
    exit 1
fi

echo "== scripts/smoke_check.py" >&2
status=0
python3 scripts/smoke_check.py "$work/report.json" --workload "$work/record.out" \
    --tolerance "$tolerance" --counters "$counters" || status=$?
if [ "$status" -ne 0 ]; then
    echo "gpu-smoke: session kept in $session; report: $work/report.json; the table: $out/gpuprof report $session" >&2
    exit 1
fi
gpu=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(", ".join(sorted({d["name"] for p in r["processes"] for d in p["devices"]})) or "unknown GPU")' "$work/report.json")
[ "$use_sim" = yes ] && gpu="$gpu (simulated)"
if [ "$keep" = yes ]; then
    echo "gpu-smoke: PASS on $gpu; session kept in $session ($out/gpuprof report $session)"
else
    rm -rf "$session"
    echo "gpu-smoke: PASS on $gpu (--keep keeps the session)"
fi
