"""Loads a `gpuprof trace --format kineto` directory with Holistic Trace Analysis
(HTA, Meta's analyser of PyTorch-profiler traces) and prints, as one JSON object,
what HTA made of it (tests/tests/it/collector/output/trace/kineto.rs compares it with
the report):

- "ranks": the ranks HTA loaded, and per rank its "distributedInfo" as HTA read it;
- "kernels": per kernel name, "count" (HTA's GPU kernel events of that name) and
  "total_us" (the "sum (us)" of HTA's get_gpu_kernel_breakdown, over all ranks);
- "launch_stats_rows": rows of get_cuda_kernel_launch_stats over all ranks;
- "linked_launches": per rank, the launch calls HTA linked to a GPU kernel by
  correlation id (TraceSymbolTable.get_runtime_launch_events_query, which the queue
  length and critical path analyses use);
- "launch_names": per rank, the names of the CPU events HTA linked to a GPU event.

usage: python analyse.py TRACE_DIR

HTA rounds event times to whole microseconds unless HTA_DISABLE_NS_ROUNDING=1
(ts up, ts + dur down); this script sets it, so durations stay exact.
"""

import json
import logging
import os
import sys

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main() -> int:
    logging.disable(logging.WARNING)
    trace_dir = sys.argv[1]
    analyzer = TraceAnalysis(trace_dir=trace_dir)
    t = analyzer.t
    ranks = t.get_ranks()
    sym = t.symbol_table
    names = sym.get_sym_table()
    kernel_cat = sym.get_sym_id_map().get("kernel", -1)

    counts = {}
    linked = {}
    launch_names = {}
    launch_query = sym.get_runtime_launch_events_query()
    for rank in ranks:
        df = t.get_trace(rank)
        kernels = df[(df["stream"] >= 0) & (df["cat"] == kernel_cat)]
        for name, n in kernels.groupby("name").size().items():
            counts[names[name]] = counts.get(names[name], 0) + int(n)
        linked[str(rank)] = int(len(df.query(launch_query)))
        cpu_linked = df[(df["stream"] == -1) & (df["index_correlation"] > 0)]
        launch_names[str(rank)] = sorted({names[n] for n in cpu_linked["name"].unique()})

    _, kernel_df = analyzer.get_gpu_kernel_breakdown(
        visualize=False,
        duration_ratio=1.0,
        num_kernels=1 << 30,
        include_memory_kernels=True,
    )
    totals = {}
    for _, row in kernel_df.iterrows():
        totals[row["name"]] = totals.get(row["name"], 0.0) + float(row["sum (us)"])

    stats = analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    launch_rows = sum(len(df) for df in stats.values())

    out = {
        "ranks": {
            str(r): {"distributedInfo": t.meta_data[r].get("distributedInfo")}
            for r in ranks
        },
        "kernels": {
            name: {"count": counts.get(name, 0), "total_us": totals.get(name)}
            for name in sorted(set(counts) | set(totals))
        },
        "launch_stats_rows": launch_rows,
        "linked_launches": linked,
        "launch_names": launch_names,
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
