#!/usr/bin/env bash
# gpuprof's benchmarks, one command, ratios measured in one run (release build):
#  1. pipeline: records per second from a batch to the session file, vs memcpy;
#  2. launch: added cost per kernel launch on the application's thread (wall and
#     thread CPU time), on the simulated stack: unprofiled, under a do-nothing CUPTI
#     tool with libgpuprof.so's subscriptions (scripts/bench/baseline-tool), and
#     under `gpuprof record`;
#  3. scale: generated LLM-serving sessions of 10^5, 10^6 and 10^7 kernels (--kernels
#     for others, e.g. 100000,1000000): bytes per kernel, and `gpuprof report`,
#     `pprof`, `roofline`, `trace` (Perfetto) and the Kineto export on each: wall
#     time, kernels/s, peak RSS, and the time over DuckDB's for the report's
#     per-kernel table from the same Parquet files, one thread (its query alone;
#     DuckDB from the pinned Python environment, target/venv) (about 4 minutes for
#     10^7 on a 2-core machine, 1 GB of disk under $TMPDIR);
#  4. recorded: `gpuprof record` of the LLM workload on the simulated stack (about
#     10^5 kernels): bytes per kernel per table, record's peak RSS, report and trace.
#   scripts/bench.sh [--launches N] [--runs N] [--kernels N,N,..] [--decode-steps N]
#                    [--mem-limit-gb N]
set -euo pipefail
cd "$(dirname "$0")/.."
launch_args=() scale_args=() recorded_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --launches|--runs) launch_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
        --kernels) scale_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
        --decode-steps) recorded_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
        --mem-limit-gb)
            scale_args+=("$1" "${2:?$1 needs a value}")
            recorded_args+=("$1" "$2"); shift 2 ;;
        *) echo "scripts/bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet --workspace
rel=$PWD/target/release
sim=$rel/bench-sim
. scripts/sim-stack.sh
sim_stack "$sim" "$rel"
cc -O2 -o "$rel/launch_flood" tests/c/launch_flood.c -ldl
python=$(scripts/python-env.sh | tail -n 1)

"$rel/gpuprof-bench" pipeline
"$rel/gpuprof-bench" launch --flood "$rel/launch_flood" --sim-dir "$sim" \
    --lib "$rel/libgpuprof.so" --baseline "$rel/libgpuprof_baseline_tool.so" \
    --gpuprof "$rel/gpuprof" ${launch_args[@]+"${launch_args[@]}"}
"$rel/gpuprof-bench" scale --gpuprof "$rel/gpuprof" --duckdb-python "$python" \
    ${scale_args[@]+"${scale_args[@]}"}
"$rel/gpuprof-bench" recorded --gpuprof "$rel/gpuprof" --workload "$rel/cudarc-llm" \
    --sim-dir "$sim" --duckdb-python "$python" ${recorded_args[@]+"${recorded_args[@]}"}
rm -rf "$sim"
