//! Launches made under stream capture are not measured: they create graph nodes
//! instead of running, and a range profiler pass around one could break the
//! application's capture. The cudarc workload with `--graph-decode` captures one
//! decode step (cuBLAS, cuBLASLt and its own kernels) and replays the graph per step;
//! prefill runs eagerly.

use std::collections::{BTreeMap, BTreeSet};

use gpuprof_tests::{
    artifact, kernels_in_order, run_injected_with_args, statuses, strings, Injection,
};
use wire::Record;

#[test]
fn captured_launches_are_not_measured_and_capture_works() {
    let (out, records) = run_injected_with_args(
        &artifact("cudarc-llm"),
        &["--graph-decode"],
        Injection::Driver,
        "inject-capture",
        "13.4",
        &[("GPUPROF_COUNTER_LAUNCHES", "1")],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    // Correlation ids of launches that created a node under capture.
    let captured: BTreeSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::GraphNode(g) => Some(g.correlation_id),
            _ => None,
        })
        .collect();
    assert!(!captured.is_empty(), "the decode step was captured");
    let measured: BTreeSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::KernelCounters(k) => Some(k.correlation_id),
            _ => None,
        })
        .collect();
    assert!(
        measured.is_disjoint(&captured),
        "captured launches measured: {:?}",
        measured.intersection(&captured).collect::<Vec<_>>()
    );
    // Every eager kernel key (its first launch, GPUPROF_COUNTER_LAUNCHES=1) is
    // measured; replayed kernels (graph launches) never are.
    let names = strings(&records);
    let mut first: BTreeMap<(String, [i32; 3], [i32; 3]), u32> = BTreeMap::new();
    for k in kernels_in_order(&records) {
        if k.graph_id != 0 {
            assert!(!measured.contains(&k.correlation_id), "{k:?}");
            continue;
        }
        first
            .entry((names[&k.name].clone(), k.grid, k.block))
            .or_insert(k.correlation_id);
    }
    let want: BTreeSet<u32> = first.values().copied().collect();
    assert_eq!(measured, want);
}
