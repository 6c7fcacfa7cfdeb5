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

use std::time::{Duration, Instant};

use gpuprof_tests::{
    compile_c, kernels_in_order, plans, run_injected_within, statuses, strings, Injection,
    SimCommand, TimedChild, WAIT_VALUE_STDOUT,
};
use sim_core::{CostModel, Launch};
use wire::Record;

/// The program needs well under a second; a profiler that waits for the kernel on
/// the application's thread never lets it finish.
const LIMIT: Duration = Duration::from_secs(30);

/// libgpuprof.so's `DECODE_WAIT`: how long a launch waits for its counters.
const DECODE_WAIT: Duration = Duration::from_millis(250);

/// What the profiler says once a decode outlives its wait.
const NO_MORE_WAITING: &str = "gpuprof: a measured kernel had not finished 250 ms after its \
     launch (it may wait for work the program issues later); from now on launches do not \
     wait for their counters, and which launches are measured depends on timing\n";

/// The KernelCounters records of a run.
fn counter_records(records: &[Record]) -> Vec<&wire::KernelCounters> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::KernelCounters(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// Wall time of `wait_value ARGS`, unprofiled, on the simulated stack.
fn unprofiled(program: &std::path::Path, args: &[&str]) -> Duration {
    let mut cmd = SimCommand::new(std::process::Command::new(program)).command();
    cmd.args(args);
    let started = Instant::now();
    let out = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(out.status.success(), "{out:?}");
    started.elapsed()
}

/// A kernel that waits for the host's later write (20 ms later), with a new grid
/// each launch (a new key each time, so each is measured): the program waits for a
/// decode once ([`DECODE_WAIT`], then one warning) rather than once per launch, and
/// finishes within twice its unprofiled time plus that one wait (it took 16 x 250
/// ms more; twice: the profiler's own start, planning included, is part of the run).
#[test]
fn a_new_grid_each_launch_waits_for_one_decode_only() {
    let program = compile_c("wait_value.c", "wait_value", &[]);
    let args = ["grids", "16", "20"];
    let alone = unprofiled(&program, &args);
    let started = Instant::now();
    let (out, records) = run_injected_within(
        &program,
        &args,
        Injection::Driver,
        "inject-wait-grids",
        "13.4",
        &[("GPUPROF_COUNTERS", "kernel")],
        LIMIT,
    );
    let profiled = started.elapsed();
    assert_eq!(out.stdout, "rounds 16\ndone\n");
    assert_eq!(out.stderr, NO_MORE_WAITING);
    assert_eq!(kernels_in_order(&records).len(), 16);
    assert!(
        profiled <= alone * 2 + DECODE_WAIT,
        "profiled {profiled:?}, unprofiled {alone:?}"
    );
}

/// Kernel replay (`GPUPROF_REPLAY=kernel`) runs a measured kernel inside its launch
/// call: a kernel behind an unmet stream wait would never let it return on a GPU
/// (the simulated CUPTI runs replay like user replay, so only what the profiler
/// decides can be checked). It is not measured, the program runs as without the
/// profiler, and the plan says which launches kernel replay leaves alone.
#[test]
fn kernel_replay_leaves_a_kernel_behind_an_unmet_wait_alone() {
    let program = compile_c("wait_value.c", "wait_value", &[]);
    let (out, records) = run_injected_within(
        &program,
        &[],
        Injection::Driver,
        "inject-wait-replay",
        "13.4",
        &[("GPUPROF_REPLAY", "kernel")],
        LIMIT,
    );
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.starts_with("write_ns "))
        .collect();
    assert_eq!(lines, WAIT_VALUE_STDOUT, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert_eq!(kernels_in_order(&records).len(), 1);
    assert_eq!(
        counter_records(&records),
        Vec::<&wire::KernelCounters>::new()
    );
    let plan = plans(&records)[0];
    assert!(
        plan.policy.contains(
            "never a communication kernel (NCCL, custom all-reduce) or a launch in a \
             context waiting on a stream memory value"
        ),
        "{}",
        plan.policy
    );
}

/// Kernel replay never measures a communication kernel (NCCL's, by name), and
/// measures the kernel beside it.
#[test]
fn kernel_replay_leaves_communication_kernels_alone() {
    let program = compile_c("wait_value.c", "wait_value", &[]);
    let (out, records) = run_injected_within(
        &program,
        &["comm"],
        Injection::Driver,
        "inject-wait-comm",
        "13.4",
        &[("GPUPROF_REPLAY", "kernel")],
        LIMIT,
    );
    assert_eq!(out.stdout, "done\n");
    assert_eq!(out.stderr, "");
    let names = strings(&records);
    let ks = kernels_in_order(&records);
    let launched: Vec<&str> = ks.iter().map(|k| names[&k.name].as_str()).collect();
    assert_eq!(
        launched,
        ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "produce"]
    );
    let measured: Vec<u32> = counter_records(&records)
        .iter()
        .map(|c| c.correlation_id)
        .collect();
    assert_eq!(measured, [ks[1].correlation_id]);
}

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
    // The launch waited DECODE_WAIT for the kernel's counters, in vain: said once.
    assert_eq!(out.stderr, NO_MORE_WAITING);
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
    let counters = counter_records(&records);
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
