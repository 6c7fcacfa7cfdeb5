//! GEMM shapes caught by the injected library, in both injection modes: the cudarc
//! workload (cuBLAS reached through `dlopen` + `dlsym`) and a C client linked against
//! cuBLAS (calls through its PLT), including a CUDA graph of GEMMs captured from a
//! stream and replayed 100 times, whose every replayed kernel must lead back to the
//! GEMM call that created its node.

use std::collections::{BTreeMap, HashMap, HashSet};

use gpuprof_tests::{
    cudarc_gemms, gemm_linked_client, kernels_in_order, run_cudarc_injected, run_injected, strings,
    Injection,
};
use wire::{Gemm, Record};

// library_types.h / cublas_api.h values, from the generated bindings.
use cupti_sys::cublas::cublasComputeType_t::{
    CUBLAS_COMPUTE_16F as COMPUTE_16F, CUBLAS_COMPUTE_32F as COMPUTE_32F,
    CUBLAS_COMPUTE_32F_FAST_TF32 as COMPUTE_32F_FAST_TF32,
};
use cupti_sys::cudaDataType_t::{CUDA_R_16BF as R_16BF, CUDA_R_16F as R_16F, CUDA_R_32F as R_32F};

fn gemms(records: &[Record]) -> Vec<&Gemm> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Gemm(g) => Some(g),
            _ => None,
        })
        .collect()
}

/// (api, m, n, k, batch, trans_a, trans_b, A/B/C/D type, compute type)
type Facts = (String, u64, u64, u64, u64, u32, u32, [u32; 4], u32);

fn facts(g: &Gemm, names: &HashMap<u32, String>) -> Facts {
    (
        names[&g.api].clone(),
        g.m,
        g.n,
        g.k,
        g.batch,
        g.trans_a,
        g.trans_b,
        [g.a_type, g.b_type, g.c_type, g.d_type],
        g.compute_type,
    )
}

#[test]
fn cudarc_workload_every_gemm_shape_is_exact() {
    let (_, records) = run_cudarc_injected("gemm-cudarc", "13.4", &[]);
    let names = strings(&records);
    let by_corr: HashMap<u32, &Gemm> = gemms(&records)
        .into_iter()
        .map(|g| (g.correlation_id, g))
        .collect();
    let kernels = kernels_in_order(&records);
    let expected = cudarc_gemms();
    assert_eq!(kernels.len(), expected.len());
    let mut calls = Vec::new();
    for (k, want) in kernels.iter().zip(&expected) {
        let got = by_corr.get(&k.correlation_id);
        match (want, got) {
            (None, None) => {}
            (Some((m, n, kk, batch)), Some(g)) => {
                let api = match (batch, n) {
                    (8, _) => "cublasGemmStridedBatchedEx",
                    (_, 1) if *m == 32000 => "cublasLtMatmul",
                    _ => "cublasGemmEx",
                };
                let trans_a = u32::from(*batch == 8);
                assert_eq!(
                    facts(g, &names),
                    (
                        api.to_string(),
                        *m,
                        *n,
                        *kk,
                        *batch,
                        trans_a,
                        0,
                        [R_16BF; 4],
                        COMPUTE_32F
                    ),
                    "kernel {} (correlation {})",
                    names[&k.name],
                    k.correlation_id
                );
                assert_eq!(g.launch_index, 0);
                calls.push(g.call);
            }
            (w, g) => panic!(
                "kernel {} (correlation {}): expected {w:?}, got {g:?}",
                names[&k.name], k.correlation_id
            ),
        }
    }
    assert_eq!(calls, (1..=47).collect::<Vec<u64>>());
    assert_eq!(by_corr.len(), 47, "no GEMM record without its kernel");
}

fn linked_client_in(how: Injection, scratch: &str) {
    let (out, records) = run_injected(&gemm_linked_client(), how, scratch, "13.4", &[]);
    assert_eq!(
        out.stdout,
        "ok: 6 GEMMs, a graph of 3 GEMMs replayed 100 times\n"
    );
    let names = strings(&records);
    let all = gemms(&records);
    let kernels: HashMap<u32, Vec<&wire::Kernel>> =
        kernels_in_order(&records)
            .into_iter()
            .fold(HashMap::new(), |mut m, k| {
                m.entry(k.correlation_id).or_default().push(k);
                m
            });
    let lt = |m, n, k, b| {
        (
            "cublasLtMatmul".to_string(),
            m,
            n,
            k,
            b,
            1,
            0,
            [R_16BF; 4],
            COMPUTE_32F,
        )
    };
    let ex = |m, n, k| {
        (
            "cublasGemmEx".to_string(),
            m,
            n,
            k,
            1,
            1,
            0,
            [R_16BF; 4],
            COMPUTE_32F,
        )
    };
    let expected: Vec<Facts> = vec![
        ex(4096, 4096, 4096),
        (
            "cublasGemmStridedBatchedEx".into(),
            128,
            256,
            64,
            32,
            0,
            0,
            [R_16BF; 4],
            COMPUTE_32F,
        ),
        (
            "cublasSgemm_v2".into(),
            1000,
            500,
            300,
            1,
            0,
            1,
            [R_32F; 4],
            COMPUTE_32F,
        ),
        (
            "cublasSgemm_v2".into(),
            256,
            256,
            256,
            1,
            0,
            0,
            [R_32F; 4],
            COMPUTE_32F_FAST_TF32,
        ),
        (
            "cublasHgemm".into(),
            512,
            512,
            512,
            1,
            0,
            0,
            [R_16F; 4],
            COMPUTE_16F,
        ),
        lt(2048, 512, 1024, 4),
        // Captured into the graph.
        ex(3072, 8, 1024),
        ex(1024, 8, 1024),
        lt(2048, 512, 1024, 4),
    ];
    let got: Vec<Facts> = all.iter().map(|g| facts(g, &names)).collect();
    assert_eq!(got, expected);
    assert_eq!(
        all.iter()
            .map(|g| (g.call, g.launch_index))
            .collect::<Vec<_>>(),
        (1..=9).map(|c| (c, 0)).collect::<Vec<_>>()
    );
    // The direct GEMMs ran one kernel each, with the launch's correlation id.
    for g in &all[..6] {
        assert_eq!(
            kernels.get(&g.correlation_id).map(Vec::len),
            Some(1),
            "{g:?}"
        );
    }
    // The captured ones created one kernel node each, inside their launch call.
    let created: Vec<(u64, u32)> = records
        .iter()
        .filter_map(|r| match r {
            Record::GraphNode(n) => Some((n.node_id, n.correlation_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        created.iter().map(|c| c.1).collect::<Vec<_>>(),
        all[6..]
            .iter()
            .map(|g| g.correlation_id)
            .collect::<Vec<_>>()
    );
    for g in &all[6..] {
        assert!(
            !kernels.contains_key(&g.correlation_id),
            "captured, not run"
        );
    }
    // Instantiation cloned each; replays run the clones.
    let clones: HashMap<u64, u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::GraphNodeCloned(c) => Some((c.node_id, c.original_node_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        clones.values().copied().collect::<HashSet<_>>(),
        created.iter().map(|c| c.0).collect::<HashSet<_>>()
    );
    let node_to_call: HashMap<u64, u64> = created
        .iter()
        .zip(&all[6..])
        .map(|((node, _), g)| (*node, g.call))
        .collect();
    let mut replayed: BTreeMap<u64, usize> = BTreeMap::new();
    for k in kernels.values().flatten().filter(|k| k.graph_node_id != 0) {
        let original = clones[&k.graph_node_id];
        *replayed.entry(node_to_call[&original]).or_default() += 1;
    }
    assert_eq!(
        replayed,
        BTreeMap::from([(7, 100), (8, 100), (9, 100)]),
        "every replayed kernel leads back to its GEMM call"
    );
}

#[test]
fn linked_client_under_driver_injection() {
    linked_client_in(Injection::Driver, "gemm-linked-driver");
}

#[test]
fn linked_client_under_ld_preload() {
    linked_client_in(Injection::Preload, "gemm-linked-preload");
}
