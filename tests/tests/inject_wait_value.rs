//! A measured kernel that waits for a value the host writes after its launch
//! (`tests/c/wait_value.c`: `cuStreamWaitValue32` on stream A, the kernel behind it,
//! the host's `cuStreamWriteValue32` on stream B 20 ms later) under the injected
//! profiler with per-kernel counters on (`GPUPROF_COUNTERS=kernel`, the default).
//! Decoding the kernel's pass waits for the kernel, as NVIDIA's DecodeData does (the
//! simulated CUPTI waits for the pass's kernels in real time); were it done on the
//! application's thread inside the launch callback, the host would never reach its
//! write and the program would hang: the run is killed after [`LIMIT`] and the test
//! fails saying so. The program must finish, and the kernel must still get its
//! counters, equal to the cost model's.

use std::time::Duration;

use gpuprof_tests::{
    compile_c, kernels_in_order, plans, run_injected_within, statuses, strings, Injection,
    WAIT_VALUE_STDOUT,
};
use sim_core::{CostModel, Launch};
use wire::Record;

/// The program needs well under a second; a profiler that waits for the kernel on
/// the application's thread never lets it finish.
const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn a_kernel_waiting_for_later_host_work_finishes_with_counters() {
    let program = compile_c("wait_value.c", "wait_value", &[]);
    let run = std::panic::catch_unwind(|| {
        run_injected_within(
            &program,
            &[],
            Injection::Driver,
            "inject-wait-value",
            "13.4",
            &[("GPUPROF_COUNTERS", "kernel")],
            LIMIT,
        )
    });
    let (out, records) = run.unwrap_or_else(|e| {
        let why = e
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| e.downcast_ref::<&str>().copied())
            .unwrap_or("?");
        if why.contains("did not finish in time") {
            panic!(
                "wait_value under libgpuprof.so still ran after {LIMIT:?} and was killed: \
                 a profiler that decodes the launch's counters on the application's \
                 thread waits for a kernel that cannot run before the host's later \
                 write:\n{why}"
            )
        }
        panic!("{why}")
    });
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| !l.starts_with("write_ns "))
            .copied()
            .collect::<Vec<_>>(),
        WAIT_VALUE_STDOUT,
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    let write_ns: u64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("write_ns "))
        .expect("write_ns")
        .parse()
        .expect("a number");

    let names = strings(&records);
    let ks = kernels_in_order(&records);
    assert_eq!(ks.len(), 1);
    let k = ks[0];
    assert_eq!(names[&k.name], "consume");
    assert!(
        k.start_ns >= write_ns,
        "the kernel ran at {} before the host's write at {write_ns}",
        k.start_ns
    );

    // Group 0 of GH100's default plan, measured on the kernel's launch.
    let plan = plans(&records)[0];
    let group0: Vec<&str> = plan.groups[0].iter().map(|id| names[id].as_str()).collect();
    let counters: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::KernelCounters(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(counters.len(), 1, "{counters:?}");
    let c = counters[0];
    assert_eq!((c.correlation_id, c.group), (k.correlation_id, 0));
    let cost = CostModel::builtin()
        .cost(&Launch {
            name: "consume".into(),
            grid: [4, 1, 1],
            block: [128, 1, 1],
            shared_mem: 0,
            registers: u32::from(k.registers_per_thread),
            gemm: None,
        })
        .expect("costed");
    let got: Vec<(&str, f64)> = c
        .metrics
        .iter()
        .map(|m| (names[&m.name].as_str(), m.value))
        .collect();
    let want: Vec<(&str, f64)> = group0
        .iter()
        .map(|m| (*m, cost.counters.get(*m).copied().unwrap_or(0.0)))
        .collect();
    assert_eq!(got, want);
}
