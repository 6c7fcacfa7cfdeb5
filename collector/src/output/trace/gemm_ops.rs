//! cuBLAS / cuBLASLt GEMM calls as the operators PyTorch's profiler records, for a
//! sink that asks ([`Sink::wants_gemm_ops`], the Kineto format), so that tools that
//! model operators from a PyTorch trace (TraceLens's GEMM tables: shape, FLOPs,
//! TFLOP/s per op) do so for programs that never ran PyTorch.
//!
//! A call is one operator: `aten::mm` (`Input Dims` `[[M, K], [K, N]]`), `aten::bmm`
//! for a batched call (`[[B, M, K], [B, K, N]]`), `aten::_scaled_mm` for FP8 inputs,
//! with PyTorch's `Input type` names of A's and B's types (`c10::BFloat16`, ...), so
//! that 2·M·N·K·B, the FLOPs such a tool computes from them, is gpuprof's model
//! FLOPs of the call. M, N, K are cuBLAS's (op(A) is M x K, op(B) K x N).
//!
//! Its span is the call's own, on the calling thread, as the GEMM hooks timed it
//! (`GemmCall` records, record protocol 10: from the hooked function's entry to its
//! return, CUPTI's clock as launches), so that the operator holds its launches and
//! the host time cuBLAS spent around them. Without one (older sessions, a span not
//! enclosing the launches, or one evicted from the [`MAX_GEMM_SPANS`] held), it is
//! its launches': from 1 ns before the first launch call's entry to the last one's
//! exit; the 1 ns makes the operator start before its first launch, as a real one
//! does, so that a tool nesting events by time (TraceLens sorts by start, stably)
//! finds the launches inside it whatever the order of the file. A call's launches are
//! consecutive on its thread: a call is written when a kernel of another call launched
//! on the same thread is finalized, or at the end.
//!
//! Left out: calls on complex or other types PyTorch has no `aten::mm` for (a tool
//! would count a complex call's FLOPs 4x short), batched FP8 calls, and kernels
//! replayed from CUDA graphs (their launch is the graph's, one call for all of its
//! kernels, which a tool would credit to every operator over it).

use std::io;

use wire::GemmCall;

use super::event::{Category, GemmOp, Sink, Slice, Source, TrackKind};
use super::{OpenGemmCall as OpenCall, TraceBuilder};
use crate::analysis::gemm::GemmShape;
use crate::analysis::join::Joined;
use crate::analysis::precision::data_type as t;

/// PyTorch's name of a `cudaDataType_t` (`Input type`), for the types it has an
/// `aten::mm` for.
fn torch_type(data_type: u32) -> Option<&'static str> {
    Some(match data_type {
        t::CUDA_R_16BF => "c10::BFloat16",
        t::CUDA_R_16F => "c10::Half",
        t::CUDA_R_32F => "float",
        t::CUDA_R_64F => "double",
        t::CUDA_R_8F_E4M3 => "c10::Float8_e4m3fn",
        t::CUDA_R_8F_E5M2 => "c10::Float8_e5m2",
        t::CUDA_R_8I => "signed char",
        _ => return None,
    })
}

/// The operator of a call of `shape`, without its ids and span; `None` for a call
/// left out (see the module documentation).
fn operator(shape: &GemmShape) -> Option<GemmOp> {
    let types = [torch_type(shape.a_type)?, torch_type(shape.b_type)?];
    let fp8 = types.iter().any(|t| t.starts_with("c10::Float8"));
    let (m, n, k, b) = (shape.m, shape.n, shape.k, shape.batch);
    let (name, dims) = match (fp8, b) {
        (true, 1) => ("aten::_scaled_mm", [vec![m, k], vec![k, n]]),
        (true, _) => return None,
        (false, 1) => ("aten::mm", [vec![m, k], vec![k, n]]),
        (false, _) => ("aten::bmm", [vec![b, m, k], vec![b, k, n]]),
    };
    Some(GemmOp {
        name,
        dims,
        types,
        external_id: 0,
        call: 0,
        label: shape.label(),
        model_flops: shape.model_flops(),
        launches: 0,
    })
}

/// GEMM call spans held for operators not yet written: enough for every call of the
/// join window, bounded whatever the run (a call never written, as a complex one,
/// leaves its span until it is the oldest).
pub(super) const MAX_GEMM_SPANS: usize = 1 << 16;

impl<S: Sink> TraceBuilder<S> {
    /// A GEMM call's own span, kept for its operator.
    pub(super) fn gemm_call_span(&mut self, pid: u32, c: &GemmCall) {
        if !self.sink.wants_gemm_ops() {
            return;
        }
        self.gemm_spans
            .insert((pid, c.call), (c.start_ns, c.end_ns));
        if self.gemm_spans.len() > MAX_GEMM_SPANS {
            self.gemm_spans.pop_first();
        }
    }

    /// A finalized kernel: part of its thread's open call, or the first of a new one
    /// (the open one is then written).
    pub(super) fn gemm_kernel(&mut self, j: &Joined) -> io::Result<()> {
        let (Some(g), Some(l)) = (j.gemm, j.launch) else {
            return Ok(());
        };
        if j.kernel.graph_id != 0 {
            return Ok(());
        }
        let key = (j.pid, l.thread_id);
        match self.gemm_calls.get_mut(&key) {
            Some(open) if open.gemm.call == g.call => {
                open.start_ns = open.start_ns.min(l.start_ns);
                open.end_ns = open.end_ns.max(l.end_ns);
                open.launches += 1;
                return Ok(());
            }
            _ => {}
        }
        let call = OpenCall {
            gemm: *g,
            start_ns: l.start_ns,
            end_ns: l.end_ns,
            launches: 1,
        };
        match self.gemm_calls.insert(key, call) {
            Some(done) => self.write_gemm_op(key, &done),
            None => Ok(()),
        }
    }

    /// Writes every call still open (at the end).
    pub(super) fn finish_gemm_ops(&mut self) -> io::Result<()> {
        let mut open: Vec<((u32, u64), OpenCall)> = self.gemm_calls.drain().collect();
        open.sort_by_key(|(key, c)| (c.start_ns, *key));
        for (key, call) in open {
            self.write_gemm_op(key, &call)?;
        }
        Ok(())
    }

    fn write_gemm_op(&mut self, (pid, thread): (u32, u64), c: &OpenCall) -> io::Result<()> {
        let Some(mut op) = operator(&GemmShape::of(&c.gemm)) else {
            return Ok(());
        };
        let (start_ns, end_ns) = match self.gemm_spans.remove(&(pid, c.gemm.call)) {
            Some((s, e)) if s <= c.start_ns && c.end_ns <= e => (s, e),
            _ => (c.start_ns.saturating_sub(1), c.end_ns),
        };
        if !self.keep(start_ns, end_ns) {
            return Ok(());
        }
        let next = self.gemm_op_ids.entry(pid).or_insert(0);
        *next += 1;
        op.external_id = *next;
        op.call = c.gemm.call;
        op.launches = c.launches;
        let track = self.track(pid, TrackKind::Thread(thread))?;
        self.sink.slice(&Slice {
            track,
            category: Category::GemmOp,
            name: op.name,
            start_ns,
            end_ns,
            args: &[],
            flow_out: None,
            flow_in: None,
            source: Source::GemmOp(&op),
        })?;
        self.stats.gemm_ops += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::gemm::bf16_shape;

    #[test]
    fn calls_are_the_operators_pytorch_records_for_them() {
        let op = operator(&bf16_shape(4096, 8192, 1024, 1)).unwrap();
        assert_eq!(
            (op.name, op.dims.clone(), op.types),
            (
                "aten::mm",
                [vec![4096, 1024], vec![1024, 8192]],
                ["c10::BFloat16"; 2]
            )
        );
        // What a tool computes from them is the call's model FLOPs.
        assert_eq!(op.model_flops, 2.0 * 4096.0 * 8192.0 * 1024.0);
        let op = operator(&bf16_shape(64, 64, 128, 32)).unwrap();
        assert_eq!(
            (op.name, op.dims),
            ("aten::bmm", [vec![32, 64, 128], vec![32, 128, 64]])
        );
        let mut fp8 = bf16_shape(16, 32, 64, 1);
        fp8.a_type = t::CUDA_R_8F_E4M3;
        fp8.b_type = t::CUDA_R_8F_E5M2;
        let op = operator(&fp8).unwrap();
        assert_eq!(
            (op.name, op.types),
            (
                "aten::_scaled_mm",
                ["c10::Float8_e4m3fn", "c10::Float8_e5m2"]
            )
        );
        fp8.batch = 2;
        assert_eq!(operator(&fp8), None);
        let mut complex = bf16_shape(16, 32, 64, 1);
        complex.a_type = t::CUDA_C_32F;
        assert_eq!(operator(&complex), None);
    }
}
