//! Launches made under stream capture are not measured: they create graph nodes
//! instead of running, and a range profiler pass around one could break the
//! application's capture. The cudarc workload with `--graph-decode` captures one
//! decode step (cuBLAS, cuBLASLt and its own kernels) and replays the graph per step;
//! prefill runs eagerly. With `GPUPROF_GRAPH_REPLAY=on` the graph's first two replays
//! are measured, one range per kernel node (kernel replay).

use std::collections::{BTreeMap, BTreeSet};

use gpuprof_tests::{
    artifact, kernels_in_order, run_injected_with_args, statuses, strings, Injection,
};
use wire::Record;

#[test]
fn captured_launches_are_not_measured_and_replays_are_by_node() {
    let (out, records) = run_injected_with_args(
        &artifact("cudarc-llm"),
        &["--graph-decode"],
        Injection::Driver,
        "inject-capture",
        "13.4",
        &[
            ("GPUPROF_COUNTER_LAUNCHES", "1"),
            ("GPUPROF_GRAPH_REPLAY", "on"),
        ],
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
    // measured; of the graph's launches (replays), the first two, whatever
    // GPUPROF_COUNTER_LAUNCHES says: the first GRAPH_LAUNCHES of each executable graph.
    let names = strings(&records);
    // A key is (name, grid, block, GEMM shape): the GEMM call's shape by launch.
    let shape_of: BTreeMap<u32, [u64; 4]> = records
        .iter()
        .filter_map(|r| match r {
            Record::Gemm(g) => Some((g.correlation_id, [g.m, g.n, g.k, g.batch])),
            _ => None,
        })
        .collect();
    type Key = (String, [i32; 3], [i32; 3], Option<[u64; 4]>);
    let mut first: BTreeMap<Key, u32> = BTreeMap::new();
    let mut replays: Vec<u32> = Vec::new();
    let mut nodes: BTreeMap<u32, u32> = BTreeMap::new();
    for k in kernels_in_order(&records) {
        if k.graph_id != 0 {
            if !replays.contains(&k.correlation_id) {
                replays.push(k.correlation_id);
            }
            *nodes.entry(k.correlation_id).or_default() += 1;
            continue;
        }
        let shape = shape_of.get(&k.correlation_id).copied();
        first
            .entry((names[&k.name].clone(), k.grid, k.block, shape))
            .or_insert(k.correlation_id);
    }
    assert_eq!(replays.len(), 4, "the default 4 decode steps");
    let mut want: BTreeSet<u32> = first.values().copied().collect();
    want.extend(&replays[..2]);
    assert_eq!(measured, want);
    // A measured replay has a record per kernel node, ranges 0, 1, ... in order.
    for id in &replays[..2] {
        let ranges: Vec<u32> = records
            .iter()
            .filter_map(|r| match r {
                Record::KernelCounters(k) if k.correlation_id == *id => Some(k.range),
                _ => None,
            })
            .collect();
        assert_eq!(ranges, (0..nodes[id]).collect::<Vec<_>>(), "replay {id}");
    }
}
