#!/usr/bin/env python3
"""Check the invariants of a `gpuprof record` run of the cudarc-llm workload.

    scripts/smoke_check.py REPORT.json (--workload FILE | --workload-line LINE)
                           [--tolerance PCT] [--slack PCT] [--counters MODE]

REPORT.json is `gpuprof report DIR --format json` of the session; the workload's
summary line ("cudarc-llm: ok: L layers, prompt P, D decode steps: N kernel launches,
G GEMMs") comes from FILE (the output of `gpuprof record`, which holds it) or is given
as LINE. Every invariant prints one line, "ok   NAME: ..." when it holds, and one
"FAIL NAME: ..., expected X, got Y" line per violation. The last line is
"PASS: ..." (exit 0) or "FAILED: ..." (exit 1). Unreadable input exits 2.

Invariants, and what each guards against:

no-drops      every `dropped[].records` is 0 and every `processes[].finished` is true
              (`unfinished` empty). A drop or an unfinished stream makes every count
              below unreliable: lost records, a ring too small, a writer that could not
              drain at exit.
kernel-count  with N own kernel launches and G GEMM calls from the workload's line:
              `kernel_count` >= N + G (each GEMM call launches at least one cuBLAS
              kernel, more with split-K); the GEMM calls seen, the sum of
              `roofline.shapes[].calls` (launches with launch index 0), equal G; the
              kernels outside GEMM calls, `kernel_count` minus the sum of
              `roofline.kernels[].gemm_launches`, equal N; `roofline.gemm_unjoined` is 0
              and `roofline.gemm_statuses` is empty; the workload launches its own
              kernels through the CUDA runtime, so with `api_calls` in the report its
              `cudaLaunchKernel` calls equal N. Guards against lost or duplicated
              kernel records, GEMM hooks that missed calls, GEMM records joined to the
              wrong kernels, and runtime launches not recorded as launches.
nvtx-ranges   `nvtx_ranges[]` has "prefill" with `count` 1 and "decode" with `count` D,
              each with `kernels` > 0 and `open` 0, and their kernels add up to
              `kernel_count` (the workload launches every kernel inside one of them, and
              a kernel is placed in a range through its launch call). Guards against
              NVTX not reaching CUPTI, range / kernel attribution that loses kernels, and
              launch records that do not join their kernels (a runtime launch whose
              correlation id is not its kernel's).
gemm-flops    for every row of `roofline.kernels` whose launches are all GEMM launches
              (`gemm_launches` == `calls`), none of them a later launch of a call
              (`gemm_part_launches` 0), with `model_flops` > 0 and `hw_flops` known:
              |hw_flops - model_flops| / model_flops <= tolerance (default 10%). When a
              GEMM's FLOPs sit on another kernel of its call (split-K), the GEMM rows
              are also compared together: the sum of their `hw_flops` against the sum
              of `roofline.shapes[].model_flops`. With counters in kernel mode at least
              one row must be compared. Guards against wrong shapes (M, N, K, batch
              read from the wrong argument), wrong FLOP weights of counters, and
              counters joined to the wrong launch. Why a tolerance: tensor-pipe
              counters count the tiles the hardware computes, and a tile is padded
              when a dimension is not a multiple of its size, so hardware FLOPs exceed
              2*M*N*K on small or odd shapes (decode GEMMs with N = 1 on tensor cores
              by up to the tile width); epilogue arithmetic adds a little too. Raise
              --tolerance for such shapes. A row's hw_flops are its measured launches'
              mean times all its launches, so the comparison is exact only when every
              launch is measured with every group: GPUPROF_COUNTER_LAUNCHES=0 and
              GPUPROF_COUNTER_BUDGET=100 (gpu-smoke.sh sets both) measure each launch
              with one group, in turn.
counters      (kernel mode) a `counters` section with a plan of mode "kernel", no
              `counters.statuses` (a status means counters were turned off), every
              `counters.kernels[].launches_with_counters` >= 1 and
              `counters.unattributed` 0. Guards against a counter pass that never runs,
              a pass group that never comes round, and counter records that do not join
              to a kernel. Skipped with --counters off or sampling.
mfu-mbu       every `mfu_pct`, `hfu_pct` and `mbu_pct` in `roofline.kernels`, `shapes`,
              `families`, `ranges` and `run` is <= 100% + slack (default 5
              percentage points, for clock boost above the rated peak and counter
              rounding). A value above means a wrong peak (wrong GPU, precision or
              bandwidth) or FLOPs / bytes joined to the wrong kernel.

Python 3 standard library only.
"""

import argparse
import json
import re
import sys

WORKLOAD_RE = re.compile(
    r"cudarc-llm: ok: (\d+) layers?, prompt (\d+), (\d+) decode steps?: "
    r"(\d+) kernel launch(?:es)?, (\d+) GEMMs?"
)

INVARIANTS = ["no-drops", "kernel-count", "nvtx-ranges", "gemm-flops", "counters", "mfu-mbu"]


def num(x):
    """A number for messages: integers as integers, others with up to 4 significant
    decimals, large values in exponent form."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        if abs(x) >= 1e6:
            return f"{x:.4e}"
        return f"{x:.4g}"
    return str(x)


def pct(x):
    """A percentage with two decimals, trailing zeros dropped."""
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{s}%"


class Checker:
    def __init__(self):
        self.results = {}  # name -> list of failure lines (empty: holds)
        self.notes = {}  # name -> summary of what held
        self.skipped = {}  # name -> why

    def fail(self, name, message):
        self.results.setdefault(name, []).append(f"FAIL {name}: {message}")

    def ok(self, name, summary):
        self.results.setdefault(name, [])
        self.notes[name] = summary

    def skip(self, name, why):
        self.skipped[name] = why


def as_list(v):
    return v if isinstance(v, list) else []


def check_drops(c, r):
    name = "no-drops"
    dropped = r.get("dropped")
    if not isinstance(dropped, list) or not dropped:
        c.fail(name, "dropped records by source: expected a list of sources, got none")
    total = 0
    for d in as_list(dropped):
        n = d.get("records")
        if n != 0:
            c.fail(name, f"records dropped from {d.get('source')}: expected 0, got {num(n)}")
        if isinstance(n, (int, float)):
            total += n
    procs = as_list(r.get("processes"))
    if not procs:
        c.fail(name, "processes: expected at least 1, got 0")
    for p in procs:
        if p.get("finished") is not True:
            c.fail(
                name,
                f"process {p.get('pid')} stream complete: expected true, got {num(p.get('finished'))}",
            )
    unfinished = r.get("unfinished")
    if unfinished not in ([], None) and not any(p.get("finished") is not True for p in procs):
        c.fail(name, f"unfinished processes: expected [], got {json.dumps(unfinished)}")
    sources = ", ".join(f"{d.get('source')} {num(d.get('records'))}" for d in as_list(dropped))
    c.ok(
        name,
        f"{num(total)} records dropped ({sources}); "
        f"{len(procs)} process{'es' if len(procs) != 1 else ''}, every stream complete",
    )


def check_kernels(c, r, w):
    name = "kernel-count"
    n, g = w["launches"], w["gemms"]
    count = r.get("kernel_count")
    if not isinstance(count, int):
        c.fail(name, f"kernel_count: expected a number, got {num(count)}")
        return
    if count < n + g:
        c.fail(
            name,
            f"kernels: expected >= {n + g} ({n} kernel launches + {g} GEMM calls), got {count}",
        )
    roof = r.get("roofline")
    if not isinstance(roof, dict):
        c.fail(name, f"GEMM calls seen (roofline.shapes): expected {g}, got none (no roofline section)")
        return
    calls = sum(s.get("calls", 0) for s in as_list(roof.get("shapes")))
    if calls != g:
        c.fail(name, f"GEMM calls seen (sum of roofline.shapes[].calls): expected {g}, got {calls}")
    gemm_launches = sum(k.get("gemm_launches", 0) for k in as_list(roof.get("kernels")))
    own = count - gemm_launches
    if own != n:
        c.fail(
            name,
            f"kernels outside GEMM calls (kernel_count - sum of gemm_launches): "
            f"expected {n}, got {own}",
        )
    unjoined = roof.get("gemm_unjoined", 0)
    if unjoined != 0:
        c.fail(name, f"GEMM records joined to no kernel: expected 0, got {num(unjoined)}")
    for st in as_list(roof.get("gemm_statuses")):
        c.fail(
            name,
            f"GEMM shapes of pid {st.get('pid')}: expected captured, got unavailable: {st.get('message')}",
        )
    runtime = None
    if isinstance(r.get("api_calls"), dict):
        runtime = sum(
            x.get("calls", 0)
            for x in as_list(r["api_calls"].get("by_thread"))
            if x.get("function") == "cudaLaunchKernel"
        )
        if runtime != n:
            c.fail(name, f"cudaLaunchKernel calls (api_calls): expected {n}, got {runtime}")
    c.ok(
        name,
        f"{count} kernels >= {n} launches + {g} GEMMs; {calls} GEMM calls seen; "
        f"{own} kernels outside GEMM calls, {gemm_launches} inside"
        + ("" if runtime is None else f"; {runtime} cudaLaunchKernel calls"),
    )


def check_ranges(c, r, w):
    name = "nvtx-ranges"
    ranges = as_list(r.get("nvtx_ranges"))
    parts = []
    in_ranges = 0
    missing = False
    for rn, want in (("prefill", 1), ("decode", w["decode_steps"])):
        found = [x for x in ranges if x.get("name") == rn]
        if not found:
            c.fail(name, f'range "{rn}": expected {want} occurrence{"s" if want != 1 else ""}, got 0 (not in nvtx_ranges)')
            missing = True
            continue
        count = sum(x.get("count", 0) for x in found)
        kernels = sum(x.get("kernels", 0) for x in found)
        opened = sum(x.get("open", 0) for x in found)
        if count != want:
            c.fail(name, f'range "{rn}": expected {want} occurrence{"s" if want != 1 else ""}, got {count}')
        if kernels <= 0:
            c.fail(name, f'kernels in range "{rn}": expected > 0, got {kernels}')
        if opened != 0:
            c.fail(name, f'range "{rn}" left open: expected 0, got {opened}')
        in_ranges += kernels
        parts.append(f"{rn} x{count} ({kernels} kernels)")
    count = r.get("kernel_count")
    if not missing and isinstance(count, int) and in_ranges != count:
        c.fail(name, f"kernels in prefill and decode: expected {count} (kernel_count), got {in_ranges}")
    c.ok(name, ", ".join(parts))


def check_flops(c, r, tolerance, counters):
    name = "gemm-flops"
    if counters != "kernel":
        c.skip(name, f"counters {counters}: no hardware FLOPs to compare")
        return
    roof = r.get("roofline")
    if not isinstance(roof, dict):
        c.fail(name, "GEMM kernel rows with model and hw FLOPs: expected >= 1, got 0 (no roofline section)")
        return
    rows = [k for k in as_list(roof.get("kernels")) if k.get("gemm_launches", 0) > 0]
    compared, worst, skipped = 0, 0.0, 0
    for k in rows:
        model, hw = k.get("model_flops"), k.get("hw_flops")
        if (
            k.get("gemm_launches") != k.get("calls")
            or k.get("gemm_part_launches", 0) != 0
            or not isinstance(model, (int, float))
            or model <= 0
            or not isinstance(hw, (int, float))
        ):
            skipped += 1
            continue
        compared += 1
        err = abs(hw - model) / model * 100.0
        worst = max(worst, err)
        if err > tolerance:
            c.fail(
                name,
                f"{k.get('name')}: |hw - model| / model expected <= {pct(tolerance)}, "
                f"got {pct(err)} (hw {num(hw)}, model {num(model)} FLOPs)",
            )
    together = ""
    if any(k.get("gemm_part_launches", 0) > 0 for k in rows) and all(
        isinstance(k.get("hw_flops"), (int, float)) and k.get("gemm_launches") == k.get("calls")
        for k in rows
    ):
        hw = sum(k["hw_flops"] for k in rows)
        model = sum(s.get("model_flops", 0) for s in as_list(roof.get("shapes")))
        if model > 0:
            compared += 1
            err = abs(hw - model) / model * 100.0
            worst = max(worst, err)
            together = f"; all GEMM kernels together {pct(err)}"
            if err > tolerance:
                c.fail(
                    name,
                    f"all GEMM kernels together: |hw - model| / model expected <= {pct(tolerance)}, "
                    f"got {pct(err)} (hw {num(hw)}, model {num(model)} FLOPs)",
                )
    if compared == 0:
        c.fail(name, "GEMM kernel rows with model and hw FLOPs: expected >= 1, got 0")
        return
    c.ok(
        name,
        f"{compared} GEMM kernel row{'s' if compared != 1 else ''} within {pct(tolerance)} "
        f"(largest |hw - model| / model {pct(worst)}){together}"
        + (f"; {skipped} row{'s' if skipped != 1 else ''} not comparable" if skipped else ""),
    )


def check_counters(c, r, counters):
    name = "counters"
    if counters != "kernel":
        c.skip(name, f"counters {counters}: no per-kernel counters expected")
        return
    cs = r.get("counters")
    if not isinstance(cs, dict):
        c.fail(name, "counters section (kernel mode): expected present, got none")
        return
    for st in as_list(cs.get("statuses")):
        c.fail(name, f"pid {st.get('pid')} counters: expected on, got turned off: {st.get('message')}")
    modes = sorted({p.get("mode") for p in as_list(cs.get("plans"))})
    if "kernel" not in modes:
        c.fail(name, f"counter plan mode: expected kernel, got {', '.join(map(str, modes)) or 'no plan'}")
    kernels = as_list(cs.get("kernels"))
    for k in kernels:
        if k.get("launches_with_counters", 0) < 1:
            c.fail(
                name,
                f"{k.get('name')}: launches with counters expected >= 1, "
                f"got 0 of {num(k.get('launches'))}",
            )
    un = cs.get("unattributed", 0)
    if un != 0:
        c.fail(name, f"counter records not joined to a kernel launch: expected 0, got {num(un)}")
    with_counters = sum(1 for k in kernels if k.get("launches_with_counters", 0) >= 1)
    c.ok(name, f"{with_counters} of {len(kernels)} kernels have counters (kernel mode)")


def check_mfu(c, r, slack):
    name = "mfu-mbu"
    roof = r.get("roofline")
    if not isinstance(roof, dict):
        c.fail(name, "roofline section: expected present, got none")
        return
    limit = 100.0 + slack
    rows = []
    for k in as_list(roof.get("kernels")):
        rows.append((f"kernel {k.get('name')}", k))
    for s in as_list(roof.get("shapes")):
        rows.append((f"GEMM shape {s.get('shape')}", s))
    for f in as_list(roof.get("families")):
        rows.append((f"family {f.get('name')}", f))
    for x in as_list(roof.get("ranges")):
        rows.append((f"range {x.get('name')}", x))
    if isinstance(roof.get("run"), dict):
        rows.append(("run", roof["run"]))
    fields = (("mfu_pct", "MFU"), ("hfu_pct", "HFU"), ("mbu_pct", "MBU"))
    best = {f: None for f, _ in fields}
    for label, row in rows:
        for field, what in fields:
            v = row.get(field)
            if not isinstance(v, (int, float)):
                continue
            if best[field] is None or v > best[field]:
                best[field] = v
            if v > limit:
                c.fail(
                    name,
                    f"{label}: {what} expected <= {pct(limit)} (100% + {pct(slack)} slack), got {pct(v)}",
                )
    shown = ", ".join(
        f"max {w} {pct(best[f]) if best[f] is not None else 'n/a'}"
        for f, w in fields
    )
    c.ok(name, f"{shown} <= {pct(limit)} (100% + {pct(slack)} slack) over {len(rows)} rows")


def parse_workload(text):
    m = WORKLOAD_RE.search(text)
    if not m:
        return None
    layers, prompt, steps, launches, gemms = map(int, m.groups())
    return {
        "line": m.group(0),
        "layers": layers,
        "prompt": prompt,
        "decode_steps": steps,
        "launches": launches,
        "gemms": gemms,
    }


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module documentation (the top of this file) for every invariant.",
    )
    ap.add_argument("report", help="gpuprof report DIR --format json, as a file ('-': stdin)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", metavar="FILE", help="a file holding the workload's summary line")
    src.add_argument("--workload-line", metavar="LINE", help="the workload's summary line")
    ap.add_argument("--tolerance", type=float, default=10.0, metavar="PCT",
                    help="largest |hw - model| / model for GEMM FLOPs, percent (default 10)")
    ap.add_argument("--slack", type=float, default=5.0, metavar="PCT",
                    help="MFU and MBU may exceed 100%% by this many percentage points (default 5)")
    ap.add_argument("--counters", choices=["kernel", "sampling", "off"], default="kernel",
                    help="the GPUPROF_COUNTERS mode of the run (default kernel)")
    a = ap.parse_args(argv)
    if a.tolerance < 0 or a.slack < 0:
        print("smoke_check: --tolerance and --slack must not be negative", file=sys.stderr)
        return 2

    try:
        if a.report == "-":
            report = json.load(sys.stdin)
        else:
            with open(a.report, encoding="utf-8") as f:
                report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"smoke_check: cannot read the report {a.report}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict):
        print(f"smoke_check: {a.report} is not a gpuprof JSON report", file=sys.stderr)
        return 2
    if a.workload is not None:
        try:
            with open(a.workload, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"smoke_check: cannot read {a.workload}: {e}", file=sys.stderr)
            return 2
    else:
        text = a.workload_line
    w = parse_workload(text)
    if w is None:
        print(
            "smoke_check: no workload summary line "
            "('cudarc-llm: ok: L layers, prompt P, D decode steps: N kernel launches, G GEMMs') in "
            + (a.workload if a.workload is not None else "--workload-line"),
            file=sys.stderr,
        )
        return 2

    print(f"workload: {w['line']}")
    print(
        f"tolerances: GEMM hw vs model FLOPs {pct(a.tolerance)}; "
        f"MFU / MBU <= 100% + {pct(a.slack)}; counters {a.counters}"
    )
    c = Checker()
    check_drops(c, report)
    check_kernels(c, report, w)
    check_ranges(c, report, w)
    check_flops(c, report, a.tolerance, a.counters)
    check_counters(c, report, a.counters)
    check_mfu(c, report, a.slack)

    failed = []
    for inv in INVARIANTS:
        if inv in c.skipped:
            print(f"skip {inv}: {c.skipped[inv]}")
            continue
        lines = c.results.get(inv, [])
        if lines:
            failed.append(inv)
            for line in lines:
                print(line)
        else:
            print(f"ok   {inv}: {c.notes.get(inv, '')}")
    checked = [i for i in INVARIANTS if i not in c.skipped]
    if failed:
        print(f"FAILED: {len(failed)} of {len(checked)} invariants: {', '.join(failed)}")
        return 1
    print(
        f"PASS: all {len(checked)} invariants hold "
        f"({report.get('kernel_count')} kernels, {w['launches']} launches, {w['gemms']} GEMMs, "
        f"{w['decode_steps']} decode steps)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
