//! GEMM shapes, and how they are joined to the kernels that computed them (the join
//! itself is [`super::join`]'s).
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

use serde::Serialize;
use wire::Gemm;

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
    /// `cublasOperation_t` of A and B (0 N, 1 T, 2 C).
    pub trans_a: u32,
    pub trans_b: u32,
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
            trans_a: g.trans_a,
            trans_b: g.trans_b,
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
        format!(
            "{}x{}x{} {}",
            self.m,
            self.n,
            self.k,
            self.batch_and_types()
        )
    }

    /// "x1 bf16·bf16->bf16 (fp32)": batch, A·B -> D types, compute type.
    fn batch_and_types(&self) -> String {
        format!(
            "x{} {}·{}->{} ({})",
            self.batch,
            data_type_name(self.a_type),
            data_type_name(self.b_type),
            data_type_name(self.d_type),
            compute_type_name(self.compute_type)
        )
    }
}

impl GemmShape {
    /// The shape as a row-major caller (PyTorch, vLLM, SGLang, TensorRT-LLM) reads
    /// it: "1x32000x1024 x1 bf16·bf16->bf16 (fp32) TN" is tokens x out features x in
    /// features, batch, types, then cuBLAS's op(A) op(B). Such a caller computes
    /// Y = X·Wᵀ (tokens x in times in x out) by asking column-major cuBLAS for
    /// Yᵀ = W·Xᵀ: cuBLAS's M is the output features, N the tokens, K the input
    /// features, and `nn.Linear`'s weights make op(A) = T, op(B) = N.
    pub fn label_as_read(&self) -> String {
        format!(
            "{}x{}x{} {} {}{}",
            self.n,
            self.m,
            self.k,
            self.batch_and_types(),
            op_name(self.trans_a),
            op_name(self.trans_b)
        )
    }
}

impl GemmShape {
    /// "1x32000x1024", with " x8" for a batch of 8: tokens x out x in as
    /// [`GemmShape::label_as_read`] orders them, without the types.
    pub fn dims_as_read(&self) -> String {
        let batch = if self.batch > 1 {
            format!(" x{}", self.batch)
        } else {
            String::new()
        };
        format!("{}x{}x{}{batch}", self.n, self.m, self.k)
    }
}

/// `cublasOperation_t` as cuBLAS's documentation writes it: N, T, C (conjugate
/// transpose); another value as its number in brackets.
pub fn op_name(op: u32) -> String {
    match op {
        0 => "N".to_string(),
        1 => "T".to_string(),
        2 => "C".to_string(),
        other => format!("[{other}]"),
    }
}

/// A BF16 GEMM (FP32 compute, op(A) = T, op(B) = N) of cuBLAS's M x N x K x batch,
/// for tests.
#[cfg(test)]
pub fn bf16_shape(m: u64, n: u64, k: u64, batch: u64) -> GemmShape {
    GemmShape {
        m,
        n,
        k,
        batch,
        a_type: 14,
        b_type: 14,
        c_type: 14,
        d_type: 14,
        compute_type: 68,
        trans_a: 1,
        trans_b: 0,
    }
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
pub(crate) mod tests;
