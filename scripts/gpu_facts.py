#!/usr/bin/env python3
"""The fact lines of the GPU check's summary (scripts/gpu-check.sh): what the sessions
of its steps show about the facts docs/ARCHITECTURE.md lists as "unchecked: needs a
GPU". Each line is "fact NAME: VALUE (step STEP)", or "fact NAME: no session (step
STEP)" when that step wrote no report.

    scripts/gpu_facts.py OUT      (OUT: gpu-check.sh's output folder)
"""

import json
import sys
from pathlib import Path


def report(out: Path, step: str):
    try:
        return json.loads((out / step / "report.json").read_text())
    except (OSError, ValueError):
        return None


def plan_modes(r) -> str:
    plans = r["counters"].get("plans") or []
    return ", ".join(f"{p['chip']} {p.get('mode', '?')}" for p in plans) or "none"


def drops(r) -> str:
    lost = {d["source"]: d["records"] for d in r.get("dropped", []) if d["records"]}
    return "none" if not lost else ", ".join(f"{k} {v}" for k, v in sorted(lost.items()))


def without_counters(r) -> str:
    k = r["counters"].get("kernels_without_counters")
    return "?" if k is None else str(len(k) if isinstance(k, list) else k)


def zero_time_kernels(r) -> str:
    rows = r.get("kernels") or []
    zero = [k for k in rows if k.get("total_ns", 1) == 0]
    return f"{len(zero)} of {len(rows)} kernel rows"


def marker_count(out: Path, step: str) -> str:
    """Whether every NVTX call gpuprof counted as making a marker record made one
    (the collector notes any difference for a stream that finished)."""
    try:
        text = (out / step / "record.out").read_text()
    except OSError:
        return "no record output"
    return "a call made no marker" if "NVTX calls counted" in text else "every call made its marker"


# (fact, step, what of the report settles it)
FACTS = [
    ("graph-hand-over", "default-graph", plan_modes),
    ("graph-decode-drops", "default-graph", drops),
    ("graph-kernels-without-counters", "default-graph", without_counters),
    ("eager-plans", "default-eager", plan_modes),
    ("eager-kernels-without-counters", "default-eager", without_counters),
    ("eager-zero-time-kernels", "default-eager", zero_time_kernels),
    ("sampling-plans", "sampling", plan_modes),
    ("sampling-drops", "sampling", drops),
    ("torch-graph-plans", "torch-graph", plan_modes),
    ("torch-graph-drops", "torch-graph", drops),
    ("torch-inject-plans", "torch-inject", plan_modes),
    ("torch-inject-drops", "torch-inject", drops),
]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT")
    out = Path(sys.argv[1])
    for fact, step, settle in FACTS:
        if not (out / step).is_dir():
            continue
        r = report(out, step)
        value = "no session" if r is None else settle(r)
        print(f"fact {fact}: {value} (step {step})")
    for step in ("default-eager", "torch-graph", "torch-eager"):
        if (out / step).is_dir():
            print(f"fact nvtx-marker-count: {marker_count(out, step)} (step {step})")


if __name__ == "__main__":
    main()
