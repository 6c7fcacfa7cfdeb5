//! GEMM shapes joined to the kernels that computed them.
//!
//! The injected library records one `Gemm` per kernel launch a cuBLAS / cuBLASLt call
//! made, keyed by the launch's correlation id. Ids are per process, so every lookup is
//! by (pid, id).
//! - A kernel launched directly (`graph_node_id == 0`) gets the `Gemm` with its own
//!   correlation id.
//! - A kernel launched from a CUDA graph carries the node id of the executable graph's
//!   node. Instantiation clones nodes (`GraphNodeCloned`, possibly several times: a
//!   graph cloned from a clone), so the node id is followed back from clone to
//!   original until a node that a launch created under stream capture (`GraphNode`),
//!   whose correlation id is that of the captured launch, and so of its `Gemm`. A
//!   cycle in the clone records ends the walk (no shape).
//!
//! A call's model FLOPs are counted once, on its first launch (`launch_index == 0`);
//! its other launches (split-K reduction, ...) are "part of a GEMM call": they carry
//! the shape, no FLOPs. Every replay of a graph counts the call again.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use wire::{Gemm, Record};

use super::names::{lookup, strings};
use super::precision::{compute_type_name, data_type_name, gemm_math, is_complex, Math};
use super::roofline::gemm_flops;

/// A GEMM call's shape and types.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GemmShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// `cudaDataType_t` of A, B, C, D.
    pub a_type: u32,
    pub b_type: u32,
    pub c_type: u32,
    pub d_type: u32,
    /// `cublasComputeType_t`.
    pub compute_type: u32,
}

impl GemmShape {
    pub fn of(g: &Gemm) -> GemmShape {
        GemmShape {
            m: g.m,
            n: g.n,
            k: g.k,
            batch: g.batch,
            a_type: g.a_type,
            b_type: g.b_type,
            c_type: g.c_type,
            d_type: g.d_type,
            compute_type: g.compute_type,
        }
    }

    /// Whether A or B is complex.
    pub fn complex(&self) -> bool {
        is_complex(self.a_type) || is_complex(self.b_type)
    }

    /// 2·M·N·K·batch (×4 complex), see [`gemm_flops`].
    pub fn model_flops(&self) -> f64 {
        gemm_flops(self.m, self.n, self.k, self.batch, self.complex())
    }

    /// The precision and pipe whose peak applies, or why none does.
    pub fn math(&self) -> Result<Math, String> {
        gemm_math(self.a_type, self.b_type, self.compute_type)
    }

    /// "4096x4096x4096 x1 bf16·bf16->bf16 (fp32)": M x N x K, batch, A·B -> D types,
    /// compute type.
    pub fn label(&self) -> String {
        let a = data_type_name(self.a_type);
        let b = data_type_name(self.b_type);
        let d = data_type_name(self.d_type);
        format!(
            "{}x{}x{} x{} {a}·{b}->{d} ({})",
            self.m,
            self.n,
            self.k,
            self.batch,
            compute_type_name(self.compute_type)
        )
    }
}

/// How a kernel launch relates to a GEMM call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmLaunch {
    pub shape: GemmShape,
    /// The API function ("cublasGemmEx", "cublasLtMatmul").
    pub api: String,
    /// Per-process call number.
    pub call: u64,
    /// 0 for the call's first launch (which carries the FLOPs).
    pub launch_index: u32,
    /// Joined through graph node records.
    pub via_graph: bool,
}

impl GemmLaunch {
    /// The model FLOPs this launch is credited with: the call's on its first launch,
    /// 0 on the others.
    pub fn flops(&self) -> f64 {
        if self.launch_index == 0 {
            self.shape.model_flops()
        } else {
            0.0
        }
    }
}

/// What [`join`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GemmJoin {
    /// By the index of the `Kernel` record in the session's records.
    pub launches: HashMap<usize, GemmLaunch>,
    /// `GemmStatus` messages: (pid, message), in file order.
    pub statuses: Vec<(u32, String)>,
    /// `Gemm` records joined to no kernel.
    pub unjoined: u64,
    /// Graph kernels whose node chain has a cycle.
    pub cycles: u64,
}

/// Joins every kernel to its GEMM call, if any (see the module documentation).
pub fn join(records: &[(u32, Record)]) -> GemmJoin {
    let strings = strings(records);
    let mut gemms: HashMap<(u32, u32), &Gemm> = HashMap::new();
    let mut created: HashMap<(u32, u64), u32> = HashMap::new();
    let mut cloned_from: HashMap<(u32, u64), u64> = HashMap::new();
    let mut out = GemmJoin::default();
    for (pid, record) in records {
        match record {
            Record::Gemm(g) => {
                gemms.entry((*pid, g.correlation_id)).or_insert(g);
            }
            Record::GraphNode(n) => {
                created.insert((*pid, n.node_id), n.correlation_id);
            }
            Record::GraphNodeCloned(c) => {
                cloned_from.insert((*pid, c.node_id), c.original_node_id);
            }
            Record::GemmStatus(s) => out.statuses.push((*pid, s.message.clone())),
            _ => {}
        }
    }
    let mut used: HashSet<(u32, u32)> = HashSet::new();
    for (i, (pid, record)) in records.iter().enumerate() {
        let Record::Kernel(k) = record else { continue };
        let correlation = if k.graph_node_id == 0 {
            Some(k.correlation_id)
        } else {
            let mut node = k.graph_node_id;
            let mut seen = HashSet::new();
            loop {
                if let Some(c) = created.get(&(*pid, node)) {
                    break Some(*c);
                }
                if !seen.insert(node) {
                    out.cycles += 1;
                    break None;
                }
                match cloned_from.get(&(*pid, node)) {
                    Some(original) => node = *original,
                    None => break None,
                }
            }
        };
        let Some(g) = correlation.and_then(|c| gemms.get(&(*pid, c))) else {
            continue;
        };
        used.insert((*pid, g.correlation_id));
        out.launches.insert(
            i,
            GemmLaunch {
                shape: GemmShape::of(g),
                api: lookup(&strings, *pid, g.api).unwrap_or("").to_string(),
                call: g.call,
                launch_index: g.launch_index,
                via_graph: k.graph_node_id != 0,
            },
        );
    }
    out.unjoined = gemms.keys().filter(|key| !used.contains(key)).count() as u64;
    out
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
pub(crate) mod tests;
