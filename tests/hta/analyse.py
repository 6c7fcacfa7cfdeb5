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
- "launch_names": per rank, the names of the CPU events HTA linked to a GPU event;
- "syncs": per rank, HTA's `cuda_sync` events by name (the waits on the GPU);
- with --critical-path ANNOTATION: "critical_path", HTA's critical path analysis of
  rank 0 over the first instance of ANNOTATION (an NVTX range): whether it
  succeeded, the edges of the path by type, and the warnings HTA logged meanwhile
  (HTA warns when a trace has no CUDA synchronization events).

usage: python analyse.py TRACE_DIR [--critical-path ANNOTATION]

HTA rounds event times to whole microseconds unless HTA_DISABLE_NS_ROUNDING=1
(ts up, ts + dur down); this script sets it, so durations stay exact.
"""

import json
import logging
import os
import sys

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

from hta.trace_analysis import TraceAnalysis  # noqa: E402


class Warnings(logging.Handler):
    """Keeps the messages HTA logs at WARNING and above."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def critical_path(analyzer, annotation):
    """HTA's critical path of rank 0 over the first instance of `annotation`."""
    warnings = Warnings()
    hta_logger = logging.getLogger("hta")
    hta_logger.addHandler(warnings)
    logging.disable(logging.NOTSET)
    try:
        graph, ok = analyzer.critical_path_analysis(
            rank=0, annotation=annotation, instance_id=0
        )
    finally:
        logging.disable(logging.WARNING)
        hta_logger.removeHandler(warnings)
    edges = {}
    for e in graph.critical_path_edges_set:
        edges[e.type.name] = edges.get(e.type.name, 0) + 1
    return {
        "ok": bool(ok),
        "edge_types": edges,
        # Timing lines HTA logs at WARNING ("Parsed ... in 0.05 seconds") are not
        # warnings about the trace.
        "warnings": sorted(
            m for m in warnings.messages if " seconds" not in m and "duration=" not in m
        ),
    }


def main() -> int:
    logging.disable(logging.WARNING)
    trace_dir = sys.argv[1]
    annotation = None
    if len(sys.argv) == 4 and sys.argv[2] == "--critical-path":
        annotation = sys.argv[3]
    analyzer = TraceAnalysis(trace_dir=trace_dir)
    t = analyzer.t
    ranks = t.get_ranks()
    sym = t.symbol_table
    names = sym.get_sym_table()
    kernel_cat = sym.get_sym_id_map().get("kernel", -1)

    counts = {}
    linked = {}
    launch_names = {}
    syncs = {}
    sync_cat = sym.get_sym_id_map().get("cuda_sync", -1)
    launch_query = sym.get_runtime_launch_events_query()
    for rank in ranks:
        df = t.get_trace(rank)
        kernels = df[(df["stream"] >= 0) & (df["cat"] == kernel_cat)]
        for name, n in kernels.groupby("name").size().items():
            counts[names[name]] = counts.get(names[name], 0) + int(n)
        linked[str(rank)] = int(len(df.query(launch_query)))
        cpu_linked = df[(df["stream"] == -1) & (df["index_correlation"] > 0)]
        launch_names[str(rank)] = sorted({names[n] for n in cpu_linked["name"].unique()})
        waits = df[df["cat"] == sync_cat]
        syncs[str(rank)] = {names[n]: int(c) for n, c in waits.groupby("name").size().items()}

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
        "syncs": syncs,
    }
    if annotation is not None:
        out["critical_path"] = critical_path(analyzer, annotation)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
