//! Record builders for tests (cargo feature `testing`): one record of each kind with
//! the fields a test does not look at filled in the same way everywhere.
//!
//! Kernels, memory operations and launches are on device 0, context 1, stream 7; a
//! test that needs another value overrides it with struct update syntax
//! (`Kernel { grid: [64, 1, 1], ..kernel(1, 2, 0, 10) }`).

use cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F;
use cupti_sys::cudaDataType_t::CUDA_R_16BF;

use crate::record::*;

/// `(pid, record)` pairs, the form the collector's analysis takes.
pub fn on(pid: u32, records: Vec<Record>) -> Vec<(u32, Record)> {
    records.into_iter().map(|r| (pid, r)).collect()
}

/// The first record of process `pid`, which ran `cmd` (split at spaces).
pub fn process(pid: u32, cmd: &str) -> Record {
    Record::Process(Box::new(ProcessInfo {
        pid,
        ppid: 1,
        command: cmd.split(' ').map(str::to_string).collect(),
        host: "host".into(),
        start_ns: 0,
        profiler_version: "0.1.0".into(),
        cupti_api_version: 130401,
        cupti_layouts: "13.4".into(),
        cupti_path: "/lib/libcupti.so.13".into(),
        environment: Vec::new(),
    }))
}

/// A GPU of `sms` SMs at `clock_khz` with an H100's memory system.
pub fn device(name: &str, cc: (u32, u32), sms: u32, clock_khz: u32) -> DeviceInfo {
    DeviceInfo {
        id: 0,
        name: name.to_string(),
        compute_capability: cc,
        sm_count: sms,
        core_clock_khz: clock_khz,
        memory_clock_khz: 2_619_000,
        memory_bus_width_bits: 5120,
        global_memory_bytes: 80 << 30,
        l2_cache_bytes: 50 << 20,
        uuid: [0; 16],
    }
}

/// Interned string `id`.
pub fn string(id: u32, text: &str) -> Record {
    Record::String(InternedString {
        id,
        text: text.into(),
    })
}

/// A kernel named by string `name`, one block of 128 threads, 32 registers.
pub fn kernel(name: u32, corr: u32, start: u64, end: u64) -> Kernel {
    Kernel {
        device_id: 0,
        context_id: 1,
        stream_id: 7,
        correlation_id: corr,
        start_ns: start,
        end_ns: end,
        name,
        grid: [1, 1, 1],
        block: [128, 1, 1],
        registers_per_thread: 32,
        ..Kernel::default()
    }
}

/// [`kernel`] as a record.
pub fn k(name: u32, corr: u32, start: u64, end: u64) -> Record {
    Record::Kernel(kernel(name, corr, start, end))
}

/// [`kernel`] launched as node `node` of graph 1.
pub fn graph_kernel(name: u32, corr: u32, node: u64, start: u64, end: u64) -> Record {
    Record::Kernel(Kernel {
        graph_id: 1,
        graph_node_id: node,
        ..kernel(name, corr, start, end)
    })
}

/// A `cuLaunchKernel` (driver cbid 307) on thread `thread`.
pub fn launch(corr: u32, thread: u64, start: u64, end: u64) -> Record {
    Record::Launch(Launch {
        correlation_id: corr,
        cbid: 307,
        runtime: false,
        thread_id: thread,
        start_ns: start,
        end_ns: end,
    })
}

/// An NVTX marker: `flags` from [`marker_flags`], message and domain string ids (0: none).
pub fn marker(flags: u32, id: u32, thread: u64, ts: u64, name: u32, domain: u32) -> Record {
    Record::Marker(Marker {
        flags,
        timestamp_ns: ts,
        id,
        thread_id: thread,
        process_id: 0,
        name,
        domain,
    })
}

/// A copy of `kind` (`CUpti_ActivityMemcpyKind`), not tied to a launch.
pub fn memcpy(kind: u8, bytes: u64, start: u64, end: u64) -> Record {
    Record::Memcpy(Memcpy {
        device_id: 0,
        context_id: 1,
        stream_id: 7,
        start_ns: start,
        end_ns: end,
        bytes,
        copy_kind: kind,
        ..Memcpy::default()
    })
}

/// A memset of zeros, not tied to a launch.
pub fn memset(bytes: u64, start: u64, end: u64) -> Record {
    Record::Memset(Memset {
        device_id: 0,
        context_id: 1,
        stream_id: 7,
        start_ns: start,
        end_ns: end,
        bytes,
        ..Memset::default()
    })
}

/// Metric values from `(string id, value)` pairs.
pub fn values(metrics: &[(u32, f64)]) -> Vec<MetricValue> {
    metrics
        .iter()
        .map(|&(name, value)| MetricValue { name, value })
        .collect()
}

/// Counter values of launch `corr` from pass group `group`.
pub fn counters(corr: u32, group: u32, metrics: &[(u32, f64)]) -> Record {
    Record::KernelCounters(KernelCounters {
        correlation_id: corr,
        group,
        metrics: values(metrics),
        range: 0,
    })
}

/// Counter values of range `range` of the pass over launch `corr` (a CUDA graph
/// launch's `range`-th kernel) from pass group `group`.
pub fn range_counters(corr: u32, group: u32, range: u32, metrics: &[(u32, f64)]) -> Record {
    Record::KernelCounters(KernelCounters {
        correlation_id: corr,
        group,
        metrics: values(metrics),
        range,
    })
}

/// A PM sampling window of device 0.
pub fn sample(start_ns: u64, end_ns: u64, metrics: &[(u32, f64)]) -> Record {
    Record::CounterSample(CounterSample {
        device_id: 0,
        start_ns,
        end_ns,
        metrics: values(metrics),
    })
}

/// A GEMM call's launch: `m x n x k`, batch 1, A transposed, BF16 in and out, FP32
/// compute, API string 90.
pub fn gemm_launch(corr: u32, call: u64, launch_index: u32, m: u64, n: u64, k: u64) -> Gemm {
    Gemm {
        correlation_id: corr,
        call,
        launch_index,
        api: 90,
        m,
        n,
        k,
        batch: 1,
        trans_a: 1,
        trans_b: 0,
        a_type: CUDA_R_16BF,
        b_type: CUDA_R_16BF,
        c_type: CUDA_R_16BF,
        d_type: CUDA_R_16BF,
        compute_type: CUBLAS_COMPUTE_32F,
    }
}

/// [`gemm_launch`] as a record.
pub fn gemm(corr: u32, call: u64, launch_index: u32, m: u64, n: u64, k: u64) -> Record {
    Record::Gemm(gemm_launch(corr, call, launch_index, m, n, k))
}

/// Graph node `node`, created by launch `corr`.
pub fn graph_node(node: u64, corr: u32) -> Record {
    Record::GraphNode(GraphNode {
        node_id: node,
        correlation_id: corr,
    })
}

/// Graph node `node`, cloned from `original`.
pub fn cloned(node: u64, original: u64) -> Record {
    Record::GraphNodeCloned(GraphNodeCloned {
        node_id: node,
        original_node_id: original,
    })
}

/// A tiny deterministic generator (64-bit LCG), so that generated-record tests need no
/// crate and see the same sequence everywhere.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number below `n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}
