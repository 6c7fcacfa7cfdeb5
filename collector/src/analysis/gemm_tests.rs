//! Joining GEMM records to kernels: direct launches, graph clones, split calls.

use wire::testing::{cloned, gemm, gemm_launch, graph_kernel, graph_node, k, string};
use wire::{GemmStatus, Record};

use super::super::aggregate::{aggregate, Aggregate};
use super::super::precision::data_type::CUDA_R_32F;
use super::super::precision::Precision;
use super::*;

#[test]
fn shapes_and_labels() {
    let g = gemm_launch(1, 1, 0, 4096, 4096, 4096);
    let s = GemmShape::of(&g);
    assert_eq!(s.model_flops(), 137_438_953_472.0);
    assert_eq!(s.math(), Ok(Math::tensor(Precision::Bf16)));
    assert_eq!(s.label(), "4096x4096x4096 x1 bf16·bf16->bf16 (fp32)");
    // A decode GEMV as PyTorch calls it: cuBLAS's 32000 x 1 x 1024 with op(A) = T.
    let lm_head = GemmShape {
        m: 32000,
        n: 1,
        k: 1024,
        trans_a: 1,
        trans_b: 0,
        ..s.clone()
    };
    assert_eq!(lm_head.label(), "32000x1x1024 x1 bf16·bf16->bf16 (fp32)");
    assert_eq!(
        lm_head.label_as_read(),
        "1x32000x1024 x1 bf16·bf16->bf16 (fp32) TN"
    );
    assert_eq!(op_name(2), "C");
    assert_eq!(op_name(7), "[7]");
    let complex = GemmShape {
        a_type: super::super::precision::data_type::CUDA_C_32F,
        b_type: super::super::precision::data_type::CUDA_C_32F,
        batch: 2,
        ..s.clone()
    };
    assert_eq!(complex.model_flops(), 4.0 * 2.0 * 137_438_953_472.0);
    let fp32 = GemmShape {
        a_type: CUDA_R_32F,
        b_type: CUDA_R_32F,
        ..s
    };
    assert_eq!(fp32.math(), Ok(Math::cuda(Precision::Fp32)));
}

/// A class: pid, kernel name id, GEMM shape and whether the call's first launch,
/// launches.
type Joined = (u32, u32, Option<(GemmShape, bool)>, u64);

/// Every class of `a`.
fn joined(a: &Aggregate) -> Vec<Joined> {
    a.classes
        .list
        .iter()
        .map(|c| {
            (
                c.key.pid,
                c.key.name,
                c.key.gemm.as_ref().map(|g| (g.shape.clone(), g.first)),
                c.tally.calls,
            )
        })
        .collect()
}

#[test]
fn joins_direct_launches_by_correlation_id_per_process() {
    let records: Vec<(u32, Record)> = vec![
        (1, string(90, "cublasGemmEx")),
        (1, gemm(5, 1, 0, 64, 32, 16)),
        (1, k(7, 5, 0, 100)),
        // Same correlation id in another process: no GEMM there.
        (2, k(7, 5, 0, 100)),
        (1, k(7, 6, 100, 200)),
        // A GEMM whose kernel never came.
        (1, gemm(9, 2, 0, 1, 1, 1)),
    ];
    let a = aggregate(&records);
    let shape = GemmShape::of(&gemm_launch(5, 1, 0, 64, 32, 16));
    assert_eq!(
        joined(&a),
        vec![
            (1, 7, Some((shape.clone(), true)), 1),
            (2, 7, None, 1),
            (1, 7, None, 1),
        ]
    );
    assert_eq!(shape.model_flops(), 2.0 * 64.0 * 32.0 * 16.0);
    assert_eq!(a.gemm_unjoined, 1);
    assert_eq!(a.gemm_cycles, 0);
}

#[test]
fn follows_graph_clones_back_to_the_captured_launch() {
    let records: Vec<(u32, Record)> = vec![
        // Capture: launch 10 created node 100 (the GEMM's main kernel), launch 11
        // created node 101 (its split-K reduction).
        (1, gemm(10, 3, 0, 128, 8, 4096)),
        (1, gemm(11, 3, 1, 128, 8, 4096)),
        (1, graph_node(100, 10)),
        (1, graph_node(101, 11)),
        // Instantiation cloned 100 -> 200 -> 300 (two levels) and 101 -> 201.
        (1, cloned(200, 100)),
        (1, cloned(300, 200)),
        (1, cloned(201, 101)),
        // Two replays of the graph (graph launch correlation ids 50 and 51).
        (1, graph_kernel(7, 50, 300, 0, 10)),
        (1, graph_kernel(8, 50, 201, 10, 12)),
        (1, graph_kernel(7, 51, 300, 20, 30)),
        (1, graph_kernel(8, 51, 201, 30, 32)),
        // A node with no history, and a clone cycle.
        (1, graph_kernel(9, 51, 999, 40, 41)),
        (1, cloned(400, 401)),
        (1, cloned(401, 400)),
        (1, graph_kernel(9, 51, 400, 50, 51)),
    ];
    let a = aggregate(&records);
    let shape = GemmShape::of(&gemm_launch(10, 3, 0, 128, 8, 4096));
    assert_eq!(
        joined(&a),
        vec![
            (1, 7, Some((shape.clone(), true)), 2),
            (1, 8, Some((shape, false)), 2),
            (1, 9, None, 2),
        ]
    );
    assert_eq!(a.gemm_cycles, 1);
    assert_eq!(a.gemm_unjoined, 0);
}

#[test]
fn keeps_gemm_statuses() {
    let records = vec![(
        3,
        Record::GemmStatus(GemmStatus {
            message: "cannot patch libcublasLt.so.12: no symbol".into(),
        }),
    )];
    assert_eq!(
        aggregate(&records).gemm_statuses,
        vec![(3, "cannot patch libcublasLt.so.12: no symbol".to_string())]
    );
}
