//! Per-kernel hardware counters inside libgpuprof.so, end to end on the simulated CUDA
//! stack: the cudarc client runs with the profiler injected and a session directory but
//! no collector; the test reads the ring the process left. Counter values must be the
//! cost model's exactly (the simulated range profiler reports them per kernel).
//!
//! The simulated CUPTI schedules any metric set in one pass, so the default GH100
//! groups (each one pass on a real H100) are collected as they would be there, one
//! group per launch, rotating. The policy's corner cases are unit tests in inject.

use std::collections::{BTreeMap, HashMap};

use gpuprof_tests::{
    cudarc_gemms, kernels_in_order, plans, run_cudarc_injected, statuses, strings, Finished,
};
use sim_core::{CostModel, GemmShape, Launch as SimLaunch};
use wire::{CounterPlan, KernelCounters, Record};

/// Metrics of the default cost model (tests/sim/core/models/default.toml).
const METRICS: [&str; 4] = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__cycles_active.avg",
];

fn counters(records: &[Record]) -> Vec<&KernelCounters> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::KernelCounters(k) => Some(k),
            _ => None,
        })
        .collect()
}

/// The policy's key: name, grid, block and the GEMM call's shape (M, N, K, batch).
type Key = (String, [i32; 3], [i32; 3], Option<(u64, u64, u64, u64)>);
/// By correlation id: the kernel's key and the cost model's counters.
type Costs = HashMap<u32, (Key, BTreeMap<String, f64>)>;
/// By key: correlation ids of its launches in order.
type LaunchesByKey = HashMap<Key, Vec<u32>>;

/// Each kernel's key and the cost model's counters for it, by correlation id, and the
/// correlation ids of each key's launches in order.
fn expected(records: &[Record]) -> (Costs, LaunchesByKey) {
    let names = strings(records);
    let ks = kernels_in_order(records);
    let gemms = cudarc_gemms();
    assert_eq!(ks.len(), gemms.len());
    let model = CostModel::builtin();
    let mut by_corr = HashMap::new();
    let mut by_key = LaunchesByKey::new();
    for (k, gemm) in ks.iter().zip(gemms) {
        let name = names[&k.name].clone();
        let launch = SimLaunch {
            name: name.clone(),
            grid: k.grid.map(|g| g as u32),
            block: k.block.map(|b| b as u32),
            shared_mem: k.dynamic_shared_memory as u32,
            registers: u32::from(k.registers_per_thread),
            gemm: gemm.map(|(m, n, kk, batch)| GemmShape {
                m,
                n,
                k: kk,
                batch,
                elem_bytes: 2,
            }),
        };
        let cost = model.cost(&launch).expect("costed");
        let key = (name, k.grid, k.block, gemm);
        by_key
            .entry(key.clone())
            .or_default()
            .push(k.correlation_id);
        by_corr.insert(k.correlation_id, (key, cost.counters));
    }
    (by_corr, by_key)
}

/// What every plan's policy ends with: CUDA graph launches are not measured per
/// kernel unless `GPUPROF_GRAPH_REPLAY=on` (`inject/graph_decode.rs` runs them with it and
/// without), and the time budget.
const GRAPH_POLICY: &str =
    "; CUDA graph launches: not measured per kernel; the first one on a GPU \
     hands the GPU over to PM sampling, whose windows are fitted per kernel class \
     (GPUPROF_GRAPH_REPLAY=on measures them by kernel replay instead, which on H100 and \
     H200 with CUPTI 13.0 crashed a PyTorch graph launch once and decoded no ranges since); \
     measuring takes at most 10% of the run's time after its first 2 s (GPUPROF_COUNTER_BUDGET)";

/// The plan's groups as metric names.
fn plan_groups<'a>(p: &CounterPlan, names: &'a HashMap<u32, String>) -> Vec<Vec<&'a str>> {
    p.groups
        .iter()
        .map(|g| g.iter().map(|id| names[id].as_str()).collect())
        .collect()
}

/// Checks every KernelCounters record against the cost model (the metrics of its
/// group in `groups`) and returns the measured launches of each key with their groups.
fn check_values(records: &[Record], groups: &[Vec<&str>]) -> HashMap<Key, Vec<(u32, u32)>> {
    let (measured, tensor_ops) = check_values_only(records, groups);
    assert!(tensor_ops > 0.0, "the GEMMs' tensor ops are measured");
    measured
}

/// [`check_values`] without requiring tensor work among the measured launches; also
/// returns the tensor ops measured.
fn check_values_only(
    records: &[Record],
    groups: &[Vec<&str>],
) -> (HashMap<Key, Vec<(u32, u32)>>, f64) {
    let names = strings(records);
    let (by_corr, _) = expected(records);
    let mut measured: HashMap<Key, Vec<(u32, u32)>> = HashMap::new();
    let mut tensor_ops = 0.0;
    for kc in counters(records) {
        let (key, cost) = by_corr
            .get(&kc.correlation_id)
            .unwrap_or_else(|| panic!("no kernel for {kc:?}"));
        let got: Vec<(&str, f64)> = kc
            .metrics
            .iter()
            .map(|m| (names[&m.name].as_str(), m.value))
            .collect();
        let want: Vec<(&str, f64)> = groups[kc.group as usize]
            .iter()
            .map(|m| (*m, cost.get(*m).copied().unwrap_or(0.0)))
            .collect();
        assert_eq!(got, want, "{key:?} (launch {})", kc.correlation_id);
        tensor_ops += want
            .iter()
            .filter(|(m, _)| *m == "sm__ops_path_tensor_src_bf16_dst_fp32.sum")
            .map(|(_, v)| v)
            .sum::<f64>();
        measured
            .entry(key.clone())
            .or_default()
            .push((kc.correlation_id, kc.group));
    }
    (measured, tensor_ops)
}

/// The default GH100 set: the plan is its groups, and successive launches of each
/// kernel rotate through them, each value the cost model's.
#[test]
fn default_set_on_gh100_rotates_launches_through_its_groups() {
    let default: Vec<Vec<&str>> = cupti::metrics::default_groups("GH100")
        .expect("GH100 has a default set")
        .iter()
        .map(|g| g.to_vec())
        .collect();
    assert!(default.len() > 1);
    let (out, records) = run_counters("default", "13.4", &[]);
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(
        (ps[0].device_id, ps[0].chip.as_str(), ps[0].mode.as_str()),
        (0, "GH100", "kernel")
    );
    assert_eq!(
        ps[0].policy,
        format!(
            "the first 64 launches of each kernel (name, grid, block, GEMM shape); \
             successive measured launches rotate through {} pass groups{GRAPH_POLICY}",
            default.len()
        )
    );
    // The default groups, and no kernel-replay group for graph launches.
    let groups = plan_groups(ps[0], &names);
    assert_eq!(groups, default);
    let measured = check_values(&records, &groups);
    let (_, by_key) = expected(&records);
    // No key has 64 launches: every launch is measured, the i-th with group i % n.
    assert_eq!(counters(&records).len(), 107);
    for (key, launches) in &by_key {
        let want: Vec<(u32, u32)> = launches
            .iter()
            .enumerate()
            .map(|(i, c)| (*c, (i % default.len()) as u32))
            .collect();
        assert_eq!(measured[key], want, "{key:?}");
    }
    assert!(
        by_key.values().any(|l| l.len() > default.len()),
        "wraps around"
    );
}

fn check_metrics_run(release: &str) {
    let list = METRICS.join(",");
    let (out, records) = run_counters(
        &format!("metrics-{release}"),
        release,
        &[("GPUPROF_METRICS", &list)],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(ps.len(), 1, "{ps:?}");
    let p = ps[0];
    assert_eq!(
        (
            p.device_id,
            p.chip.as_str(),
            p.mode.as_str(),
            p.policy.as_str()
        ),
        (
            0,
            "GH100",
            "kernel",
            format!(
                "the first 64 launches of each kernel (name, grid, block, GEMM shape); one pass \
                 group{GRAPH_POLICY}"
            )
            .as_str()
        )
    );
    // The chosen metrics in one group.
    let groups = plan_groups(p, &names);
    assert_eq!(groups, vec![METRICS.to_vec()]);
    // No key has 64 launches: every launch is measured, exactly, with the one group.
    let measured = check_values(&records, &groups);
    let (_, by_key) = expected(&records);
    let want: LaunchesByKey = measured
        .iter()
        .map(|(k, v)| {
            assert!(v.iter().all(|(_, g)| *g == 0));
            (k.clone(), v.iter().map(|(c, _)| *c).collect())
        })
        .collect();
    assert_eq!(want, by_key);
    assert_eq!(counters(&records).len(), 107);
}

#[test]
fn chosen_metrics_are_the_cost_models_values_cupti_13_4() {
    check_metrics_run("13.4");
}

#[test]
fn chosen_metrics_are_the_cost_models_values_cupti_12_9() {
    check_metrics_run("12.9");
}

#[test]
fn counter_launches_limits_each_kernel_key() {
    let list = METRICS.join(",");
    let (out, records) = run_counters(
        "launches-2",
        "13.4",
        &[
            ("GPUPROF_METRICS", &list),
            ("GPUPROF_COUNTER_LAUNCHES", "2"),
        ],
    );
    assert_eq!(out.stderr, "");
    assert_eq!(
        plans(&records)[0].policy,
        format!(
            "the first 2 launches of each kernel (name, grid, block, GEMM shape); one pass group{GRAPH_POLICY}"
        )
    );
    let names = strings(&records);
    let measured = check_values(&records, &plan_groups(plans(&records)[0], &names));
    let (_, by_key) = expected(&records);
    assert_eq!(measured.len(), by_key.len(), "every key measured");
    for (key, launches) in &by_key {
        let first: Vec<(u32, u32)> = launches.iter().take(2).map(|c| (*c, 0)).collect();
        assert_eq!(measured[key], first, "{key:?}");
    }
    // Some keys have more than two launches, so the limit mattered.
    assert!(by_key.values().any(|l| l.len() > 2));
}

/// `GPUPROF_REPLAY=kernel`: one config holding every metric of the default set, so
/// each measured launch has all of them: 5 passes on GH100 (NVIDIA's count, which
/// the simulated CUPTI asks), all run inside the launch.
#[test]
fn kernel_replay_gives_every_metric_on_each_measured_launch() {
    let mut union: Vec<&str> = Vec::new();
    for m in cupti::metrics::default_groups("GH100")
        .expect("GH100 has a default set")
        .iter()
        .flat_map(|g| g.iter())
    {
        if !union.contains(m) {
            union.push(m);
        }
    }
    let (out, records) = run_counters(
        "replay-kernel",
        "13.4",
        &[
            ("GPUPROF_REPLAY", "kernel"),
            ("GPUPROF_COUNTER_LAUNCHES", "1"),
        ],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(
        ps[0].policy,
        format!(
            "the first launch of each kernel (name, grid, block, GEMM shape); one pass group; \
             kernel replay: every metric on each measured launch, 5 passes \
             (the kernel runs once per pass), never a communication kernel (NCCL, custom \
             all-reduce) or a launch in a context waiting on a stream memory value \
             (replayed inside its launch, it could wait forever){GRAPH_POLICY}"
        )
    );
    let groups = plan_groups(ps[0], &names);
    assert_eq!(groups, vec![union]);
    let measured = check_values(&records, &groups);
    let (_, by_key) = expected(&records);
    assert_eq!(measured.len(), by_key.len(), "every key measured");
    for (key, launches) in &by_key {
        assert_eq!(measured[key], vec![(launches[0], 0)], "{key:?}");
    }
}

/// `GPUPROF_COUNTER_RANGE=decode`: only the launches inside the workload's "decode"
/// NVTX ranges are measured (followed live through CUPTI's NVTX callbacks); the 23
/// prefill kernels come first in the run and none is measured.
#[test]
fn counter_range_measures_only_launches_inside_the_named_nvtx_range() {
    let list = METRICS.join(",");
    let (out, records) = run_counters(
        "range-decode",
        "13.4",
        &[
            ("GPUPROF_METRICS", &list),
            ("GPUPROF_COUNTER_RANGE", "decode"),
        ],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(
        ps[0].policy,
        format!(
            "the first 64 launches of each kernel (name, grid, block, GEMM shape); one pass group; \
             only launches inside NVTX range \"decode\"{GRAPH_POLICY}"
        )
    );
    // Decode's GEMMs are GEMVs on CUDA cores: no tensor work among them.
    let (_, tensor_ops) = check_values_only(&records, &plan_groups(ps[0], &names));
    assert_eq!(tensor_ops, 0.0);
    let kernels = kernels_in_order(&records);
    assert_eq!(kernels.len(), 107);
    let mut measured: Vec<u32> = counters(&records)
        .iter()
        .map(|k| k.correlation_id)
        .collect();
    measured.sort_unstable();
    let mut decode: Vec<u32> = kernels[23..].iter().map(|k| k.correlation_id).collect();
    decode.sort_unstable();
    assert_eq!(measured, decode);
}

#[test]
fn counters_off_emits_no_counter_records() {
    let (out, records) = run_counters("off", "13.4", &[("GPUPROF_COUNTERS", "off")]);
    assert_eq!(out.stderr, "");
    assert!(!records.iter().any(|r| matches!(
        r,
        Record::CounterPlan(_)
            | Record::CounterStatus(_)
            | Record::KernelCounters(_)
            | Record::CounterSample(_)
    )));
    assert_eq!(kernels_in_order(&records).len(), 107);
}

fn run_counters(name: &str, release: &str, env: &[(&str, &str)]) -> (Finished, Vec<Record>) {
    run_cudarc_injected(&format!("counters-{name}"), release, env)
}
