//! The pricing oracle of the roofline tests
//! (tests/tests/it/collector/analysis/roofline.rs): what
//! `gpuprof report --format json` must say of a session on the simulated H100, computed
//! from the simulated GPU's cost model (`sim_core`, the same model that timed and
//! counted each kernel), the GEMM shapes the programs are known to call, and the H100
//! SXM datasheet peaks, with the formulas of collector/src/analysis/{roofline,
//! efficiency}.rs's documentation.
//!
//! Floats are compared exactly: each expected value is computed with the same
//! operations in the same order as the documented formula, then printed and parsed like
//! the report's JSON (see [`norm`]).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sim_core::{CostModel, GemmShape, Launch as SimLaunch};
use wire::{Kernel, Record};

/// The simulated device's name, and its datasheet peaks (peak_table.rs, H100 SXM5).
pub const H100: &str = "NVIDIA H100 80GB HBM3";
pub const H100_SOURCE: &str = "NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 dense 989.4 \
     TFLOP/s, FP8 1978.8, TF32 494.7, FP64 tensor 67, FP32 67, FP64 34 TFLOP/s, 3.35 TB/s";

// library_types.h / cublas_api.h values, from the generated bindings.
pub use cupti_sys::cublas::cublasComputeType_t::{
    CUBLAS_COMPUTE_16F as COMPUTE_16F, CUBLAS_COMPUTE_32F as COMPUTE_32F,
    CUBLAS_COMPUTE_32F_FAST_TF32 as COMPUTE_32F_FAST_TF32,
};
pub use cupti_sys::cudaDataType_t::{
    CUDA_R_16BF as R_16BF, CUDA_R_16F as R_16F, CUDA_R_32F as R_32F,
};

// ---------------------------------------------------------------------------------
// Peaks

/// The ceilings the expectations use, FLOP/s and bytes/s.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    pub bf16: f64,
    pub fp16: f64,
    pub tf32: f64,
    pub fp32: f64,
    pub dram: f64,
}

/// peak_table.rs's H100 SXM5 entry, converted as `from_tera` does (exact integers).
pub const H100_PEAKS: Ceilings = Ceilings {
    bf16: 989.4e12,
    fp16: 989.4e12,
    tf32: 494.7e12,
    fp32: 67e12,
    dram: 3.35e12,
};

/// peak_table.rs's A100 SXM4 80GB, L40S and B200 entries, converted the same way.
pub const A100_PEAKS: Ceilings = Ceilings {
    bf16: 312e12,
    fp16: 312e12,
    tf32: 156e12,
    fp32: 19.5e12,
    dram: 2.039e12,
};
pub const L40S_PEAKS: Ceilings = Ceilings {
    bf16: 362.05e12,
    fp16: 362.05e12,
    tf32: 181.025e12,
    fp32: 91.6e12,
    dram: 0.864e12,
};
pub const B200_PEAKS: Ceilings = Ceilings {
    bf16: 2250e12,
    fp16: 2250e12,
    tf32: 1125e12,
    fp32: 80e12,
    dram: 8e12,
};

/// The simulated GPUs (`SIMCUDA_CHIP`) and their ceilings.
pub const CHIP_PEAKS: [(&str, Ceilings); 4] = [
    ("GA100", A100_PEAKS),
    ("AD102", L40S_PEAKS),
    ("GH100", H100_PEAKS),
    ("GB100", B200_PEAKS),
];

/// A precision and pipe, ordered as the report orders them (precision widest first,
/// then tensor before CUDA cores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Math {
    Fp64Tensor,
    Fp64Cuda,
    Fp32Cuda,
    Tf32Tensor,
    Fp16Tensor,
    Fp16Cuda,
    Bf16Tensor,
    Fp8Tensor,
}

impl Math {
    pub fn precision(self) -> &'static str {
        match self {
            Math::Fp64Tensor | Math::Fp64Cuda => "FP64",
            Math::Fp32Cuda => "FP32",
            Math::Tf32Tensor => "TF32",
            Math::Fp16Tensor | Math::Fp16Cuda => "FP16",
            Math::Bf16Tensor => "BF16",
            Math::Fp8Tensor => "FP8",
        }
    }

    pub fn pipe(self) -> &'static str {
        match self {
            Math::Fp64Cuda | Math::Fp32Cuda | Math::Fp16Cuda => "CUDA cores",
            _ => "tensor",
        }
    }

    pub fn peak(self, c: &Ceilings) -> Option<f64> {
        match self {
            Math::Bf16Tensor => Some(c.bf16),
            Math::Fp16Tensor => Some(c.fp16),
            Math::Tf32Tensor => Some(c.tf32),
            Math::Fp32Cuda => Some(c.fp32),
            _ => None,
        }
    }
}

/// FLOPs per count and math of the FLOP counters of the GH100 default set (tensor-pipe
/// operations count 1, FMAs 2, adds and multiplies 1).
pub fn flop_weight(metric: &str) -> Option<(f64, Math)> {
    Some(match metric {
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum" => (1.0, Math::Bf16Tensor),
        "sm__ops_path_tensor_op_hgmma_src_fp16.sum"
        | "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum"
        | "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum" => (1.0, Math::Fp16Tensor),
        "sm__ops_path_tensor_src_fp8.sum" => (1.0, Math::Fp8Tensor),
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum" => (1.0, Math::Tf32Tensor),
        "sm__ops_path_tensor_src_fp64.sum" => (1.0, Math::Fp64Tensor),
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" => (2.0, Math::Fp32Cuda),
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
        | "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum" => (1.0, Math::Fp32Cuda),
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum" => (2.0, Math::Fp16Cuda),
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum"
        | "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum" => (1.0, Math::Fp16Cuda),
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum" => (2.0, Math::Fp64Cuda),
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum"
        | "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum" => (1.0, Math::Fp64Cuda),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------
// GEMM shapes

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// `cudaDataType_t` of A, B, C and D (the programs use one type per call).
    pub dtype: u32,
    pub compute: u32,
    /// `cublasOperation_t` of A and B, as the program passes them.
    pub ops: (u32, u32),
}

pub const OP_N: u32 = 0;
pub const OP_T: u32 = 1;

/// `cublasOperation_t` as the report names it.
pub fn op_name(op: u32) -> &'static str {
    match op {
        OP_N => "N",
        OP_T => "T",
        _ => panic!("op {op}: the programs pass N or T"),
    }
}

/// A BF16 GEMM with FP32 compute, op(A) = op(B) = N.
pub const fn bf16(m: u64, n: u64, k: u64, batch: u64) -> Shape {
    Shape {
        m,
        n,
        k,
        batch,
        dtype: R_16BF,
        compute: COMPUTE_32F,
        ops: (OP_N, OP_N),
    }
}

impl Shape {
    /// The same with op(A), op(B) = `a`, `b`.
    pub const fn ops(self, a: u32, b: u32) -> Shape {
        Shape {
            ops: (a, b),
            ..self
        }
    }
}

impl Shape {
    /// 2·M·N·K·batch.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.batch as f64
    }

    pub fn elem_bytes(&self) -> u32 {
        if self.dtype == R_32F {
            4
        } else {
            2
        }
    }

    pub fn math(&self) -> Math {
        match (self.dtype, self.compute) {
            (R_32F, COMPUTE_32F_FAST_TF32) => Math::Tf32Tensor,
            (R_32F, _) => Math::Fp32Cuda,
            (R_16F, _) => Math::Fp16Tensor,
            _ => Math::Bf16Tensor,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self.dtype {
            R_32F => "fp32",
            R_16F => "fp16",
            _ => "bf16",
        }
    }

    pub fn compute_name(&self) -> &'static str {
        match self.compute {
            COMPUTE_16F => "fp16",
            COMPUTE_32F_FAST_TF32 => "fp32 fast tf32",
            _ => "fp32",
        }
    }

    pub fn label(&self) -> String {
        let t = self.type_name();
        format!(
            "{}x{}x{} x{} {t}·{t}->{t} ({})",
            self.m,
            self.n,
            self.k,
            self.batch,
            self.compute_name()
        )
    }
}

/// The GEMMs of tests/c/gemm_linked.c, in call order: six direct ones, then the three
/// captured into the graph that is replayed 100 times.
pub const LINKED_DIRECT: [Shape; 6] = [
    bf16(4096, 4096, 4096, 1).ops(OP_T, OP_N),
    bf16(128, 256, 64, 32),
    Shape {
        m: 1000,
        n: 500,
        k: 300,
        batch: 1,
        dtype: R_32F,
        compute: COMPUTE_32F,
        ops: (OP_N, OP_T),
    },
    // FP32 data with the handle in TF32 math mode.
    Shape {
        m: 256,
        n: 256,
        k: 256,
        batch: 1,
        dtype: R_32F,
        compute: COMPUTE_32F_FAST_TF32,
        ops: (OP_N, OP_N),
    },
    Shape {
        m: 512,
        n: 512,
        k: 512,
        batch: 1,
        dtype: R_16F,
        compute: COMPUTE_16F,
        ops: (OP_N, OP_N),
    },
    // cuBLASLt with CUBLASLT_MATMUL_DESC_TRANSA = T.
    bf16(2048, 512, 1024, 4).ops(OP_T, OP_N),
];
pub const LINKED_GRAPH: [Shape; 3] = [
    bf16(3072, 8, 1024, 1).ops(OP_T, OP_N),
    bf16(1024, 8, 1024, 1).ops(OP_T, OP_N),
    bf16(2048, 512, 1024, 4).ops(OP_T, OP_N),
];

// ---------------------------------------------------------------------------------
// The expected values

/// A launch configuration: grid, block.
pub type Config = ([i32; 3], [i32; 3]);

/// One kernel launch as the cost model prices it.
#[derive(Debug, Clone)]
pub struct Priced {
    pub mangled: String,
    /// Grid and block.
    pub config: Config,
    pub ns: u64,
    pub shape: Option<Shape>,
    /// Every metric of the plan, when this launch was measured.
    pub counters: Option<BTreeMap<String, f64>>,
    /// Launched from a CUDA graph.
    pub graph: bool,
}

impl Priced {
    pub fn bytes(&self) -> Option<f64> {
        let c = self.counters.as_ref()?;
        Some(c["dram__bytes_read.sum"] + c["dram__bytes_write.sum"])
    }

    /// Its own hardware FLOPs, by math.
    pub fn hw_by_math(&self) -> Option<BTreeMap<Math, f64>> {
        let mut out = BTreeMap::new();
        for (name, v) in self.counters.as_ref()? {
            if let Some((w, math)) = flop_weight(name) {
                *out.entry(math).or_insert(0.0) += w * v;
            }
        }
        Some(out)
    }

    pub fn hw_flops(&self) -> Option<f64> {
        self.hw_by_math().map(|m| m.values().sum())
    }
}

/// The metrics of the plan under `GPUPROF_REPLAY=kernel` on `chip`: its default
/// groups.
pub fn plan_metrics(chip: &str) -> Vec<&'static str> {
    let mut all: Vec<&str> = Vec::new();
    for m in cupti::metrics::default_groups(chip)
        .expect("the chip has a default set")
        .iter()
        .flat_map(|g| g.iter())
    {
        if !all.contains(m) {
            all.push(m);
        }
    }
    all
}

/// Prices every kernel record of `records` (in record order) with the cost model:
/// `shape_of` gives the GEMM shape of each (by its index among the kernels in start
/// order), `measured` whether it carries counters. Checks each recorded duration is the
/// model's.
pub fn price(
    records: &[(u32, Record)],
    shape_of: impl Fn(usize, &Kernel) -> Option<Shape>,
    measured: impl Fn(&Kernel) -> bool,
) -> Vec<Priced> {
    price_on("GH100", records, shape_of, measured)
}

/// [`price`] for a session on the simulated `chip` (`SIMCUDA_CHIP`): the cost model
/// with that chip's constants, its default metric set.
pub fn price_on(
    chip: &str,
    records: &[(u32, Record)],
    shape_of: impl Fn(usize, &Kernel) -> Option<Shape>,
    measured: impl Fn(&Kernel) -> bool,
) -> Vec<Priced> {
    let names: BTreeMap<u32, String> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::String(s) => Some((s.id, s.text.clone())),
            _ => None,
        })
        .collect();
    let kernels: Vec<&Kernel> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Kernel(k) => Some(k),
            _ => None,
        })
        .collect();
    let mut by_start: Vec<usize> = (0..kernels.len()).collect();
    by_start.sort_by_key(|&i| kernels[i].start_ns);
    let mut order = vec![0; kernels.len()];
    for (pos, &i) in by_start.iter().enumerate() {
        order[i] = pos;
    }
    let model = CostModel::builtin().with_chip(chip);
    let metrics = plan_metrics(chip);
    kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mangled = names[&k.name].clone();
            let shape = shape_of(order[i], k);
            let cost = model
                .cost(&SimLaunch {
                    name: mangled.clone(),
                    grid: k.grid.map(|g| g as u32),
                    block: k.block.map(|b| b as u32),
                    shared_mem: k.dynamic_shared_memory as u32,
                    registers: u32::from(k.registers_per_thread),
                    gemm: shape.map(|s| GemmShape {
                        m: s.m,
                        n: s.n,
                        k: s.k,
                        batch: s.batch,
                        elem_bytes: s.elem_bytes(),
                    }),
                })
                .expect("costed");
            assert_eq!(
                k.end_ns - k.start_ns,
                cost.duration_ns,
                "{mangled}: the recorded duration is the cost model's"
            );
            let counters = measured(k).then(|| {
                metrics
                    .iter()
                    .map(|m| (m.to_string(), cost.counters.get(*m).copied().unwrap_or(0.0)))
                    .collect()
            });
            Priced {
                mangled,
                config: (k.grid, k.block),
                ns: cost.duration_ns,
                shape,
                counters,
                graph: k.graph_node_id != 0,
            }
        })
        .collect()
}

/// `v` printed and parsed back, as the report's JSON is: serde_json prints floats
/// exactly (shortest round-trip form) but its parser may round the last bit
/// differently, so equal values compare equal only after the same trip.
pub fn norm(v: Value) -> Value {
    serde_json::from_str(&v.to_string()).expect("JSON")
}

pub fn num(v: impl Into<Value>) -> Value {
    norm(v.into())
}

pub fn pct(f: Option<f64>) -> Value {
    norm(json!(f.map(|f| (f * 10_000.0).round() / 100.0)))
}

/// The roofline formulas (roofline.rs) on one kernel, shape or group of launches.
pub fn point(
    flops: Option<f64>,
    bytes: Option<f64>,
    ns: u64,
    peak: Option<f64>,
    bw: Option<f64>,
) -> Map<String, Value> {
    let t = (ns > 0).then_some(ns as f64);
    let intensity = flops
        .zip(bytes)
        .filter(|(_, b)| *b > 0.0)
        .map(|(f, b)| f / b);
    let achieved = flops.zip(t).map(|(f, t)| f * 1e9 / t);
    let mfu = achieved.zip(peak).map(|(a, p)| a / p);
    let mbu = bytes.zip(t).zip(bw).map(|((b, t), w)| b * 1e9 / t / w);
    let ridge = peak.zip(bw).map(|(p, w)| p / w);
    let unbounded = matches!((flops, bytes), (Some(f), Some(b)) if b == 0.0 && f > 0.0);
    let bound = match intensity.zip(ridge) {
        Some((ai, r)) if ai < r => Some("memory"),
        Some(_) => Some("compute"),
        None if unbounded => Some("compute"),
        None => None,
    };
    let attainable = match intensity.zip(peak).zip(bw) {
        Some(((ai, p), w)) => Some(p.min(ai * w)),
        None if unbounded => peak,
        None => None,
    };
    let efficiency = achieved
        .zip(attainable)
        .and_then(|(a, t)| (t > 0.0).then(|| a / t));
    let mut m = Map::new();
    m.insert("intensity".into(), num(intensity));
    m.insert("achieved_flops_per_s".into(), num(achieved));
    m.insert("mfu_pct".into(), pct(mfu));
    m.insert("mbu_pct".into(), pct(mbu));
    m.insert("ridge".into(), num(ridge));
    m.insert("bound".into(), json!(bound));
    m.insert("attainable_flops_per_s".into(), num(attainable));
    m.insert("roofline_efficiency_pct".into(), pct(efficiency));
    m
}

/// The bytes of each launch: its own, else the mean of the measured launches of its
/// kernel, launch configuration and shape; `None` when neither exists.
pub fn launch_bytes(launches: &[Priced]) -> Vec<Option<f64>> {
    let key = |l: &'_ Priced| -> (String, Config, Option<Shape>) {
        (l.mangled.clone(), l.config, l.shape)
    };
    let mut groups: BTreeMap<(String, Config, Option<Shape>), (u64, f64)> = BTreeMap::new();
    for l in launches {
        if let Some(b) = l.bytes() {
            let e = groups.entry(key(l)).or_default();
            e.0 += 1;
            e.1 += b;
        }
    }
    launches
        .iter()
        .map(|l| {
            l.bytes()
                .or_else(|| groups.get(&key(l)).map(|(n, s)| s / *n as f64))
        })
        .collect()
}

/// The family of the kernels the workloads run that have no GEMM shape.
pub fn family(name: &str) -> &'static str {
    match name {
        "rms_norm_kernel" => "reduction",
        "add_residual_kernel" | "silu_and_mul_kernel" => "elementwise",
        "paged_attention_v1_kernel" | "flash_fwd_kernel" => "attention",
        other => panic!("no family known for {other}"),
    }
}

/// A kernel row as the report must show it, and what its missing list must say.
pub struct ExpectedRow {
    pub row: Map<String, Value>,
    pub hw_flops: Option<f64>,
    pub gpu_ns: u64,
    pub missing: Vec<String>,
}

/// The hardware FLOPs of one kernel row's launches, as the collector scales them.
pub struct RowHw {
    /// Per math, over all the row's launches.
    pub by_math: BTreeMap<Math, f64>,
    /// Every configuration had a measured launch (and one did).
    pub complete: bool,
    pub counted: bool,
    /// The fewest launches a configuration's counters came from.
    pub fewest: u64,
    /// The configurations no launch of which was measured.
    pub unmeasured: Vec<Config>,
    /// The row's configurations, each with its launches' count.
    pub configs: BTreeMap<Config, u64>,
    /// Per measured configuration: FLOPs per launch, by math (each counter's mean).
    pub per_launch: BTreeMap<Config, BTreeMap<Math, f64>>,
}

/// Per launch configuration (grid, block), each FLOP counter's mean over the launches
/// that measured it, times the configuration's launches, summed.
pub fn row_hw(ls: &[&Priced]) -> RowHw {
    let mut configs: BTreeMap<Config, Vec<&Priced>> = BTreeMap::new();
    for l in ls {
        configs.entry(l.config).or_default().push(l);
    }
    let mut out = RowHw {
        by_math: BTreeMap::new(),
        complete: true,
        counted: false,
        fewest: u64::MAX,
        unmeasured: Vec::new(),
        configs: configs.iter().map(|(c, l)| (*c, l.len() as u64)).collect(),
        per_launch: BTreeMap::new(),
    };
    for (config, cl) in &configs {
        let measured: Vec<&&Priced> = cl.iter().filter(|l| l.counters.is_some()).collect();
        if measured.is_empty() {
            out.complete = false;
            out.unmeasured.push(*config);
            continue;
        }
        out.counted = true;
        out.fewest = out.fewest.min(measured.len() as u64);
        let mut per_launch: BTreeMap<Math, f64> = BTreeMap::new();
        for m in measured[0].counters.as_ref().unwrap().keys() {
            if let Some((w, math)) = flop_weight(m) {
                let sum: f64 = measured
                    .iter()
                    .map(|l| l.counters.as_ref().unwrap()[m])
                    .sum();
                *per_launch.entry(math).or_insert(0.0) += w * sum / measured.len() as f64;
            }
        }
        for (m, f) in &per_launch {
            *out.by_math.entry(*m).or_insert(0.0) += f * cl.len() as f64;
        }
        out.per_launch.insert(*config, per_launch);
    }
    out.complete &= out.counted;
    out
}

/// The math with the most FLOPs.
fn most_flops(by_math: &BTreeMap<Math, f64>) -> Option<Math> {
    by_math
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(m, _)| *m)
}

/// One row per kernel name, by GPU time (longest first; ties by mangled name).
///
/// Hardware FLOPs: per launch configuration (grid, block), each FLOP counter's mean
/// over the launches that measured it, times the configuration's launches, summed; none
/// when a configuration was never measured. DRAM bytes: the sum over the launches, each
/// its own or the mean of its kernel, configuration and shape; none unless every launch
/// has them.
pub fn expected_rows(launches: &[Priced], c: &Ceilings) -> Vec<ExpectedRow> {
    let own_or_same = launch_bytes(launches);
    // What the missing list says would give a value: counters were off in the
    // process, or these launches were not measured.
    let counters_on = launches.iter().any(|l| l.counters.is_some());
    let off = ": hardware counters were off (the Counters section says why)";
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, l) in launches.iter().enumerate() {
        by_name.entry(&l.mangled).or_default().push(i);
    }
    let mut rows: Vec<ExpectedRow> = by_name
        .into_iter()
        .map(|(name, ls)| {
            let calls = ls.len() as u64;
            let gpu_ns: u64 = ls.iter().map(|&i| launches[i].ns).sum();
            let shapes: Vec<Shape> = ls.iter().filter_map(|&i| launches[i].shape).collect();
            let gemm = !shapes.is_empty();
            assert!(!gemm || shapes.len() == ls.len(), "{name}: mixed rows");
            let model_flops: Option<f64> =
                gemm.then(|| shapes.iter().map(Shape::flops).sum::<f64>());
            let row_launches: Vec<&Priced> = ls.iter().map(|&i| &launches[i]).collect();
            let RowHw {
                by_math,
                complete,
                counted,
                fewest,
                unmeasured,
                configs,
                ..
            } = row_hw(&row_launches);
            let hw_flops = (counted && complete).then(|| by_math.values().sum::<f64>());
            let hw_math = most_flops(&by_math);
            let (source, math, flops) = if gemm {
                // One precision per kernel in these programs.
                let math = shapes[0].math();
                assert!(shapes.iter().all(|s| s.math() == math));
                (Some("model"), Some(math), model_flops)
            } else if hw_flops.is_some() {
                (Some("hw"), hw_math, hw_flops)
            } else {
                (None, None, None)
            };
            let bytes_launches = ls
                .iter()
                .filter(|&&i| launches[i].counters.is_some())
                .count() as u64;
            let with_bytes = ls.iter().filter(|&&i| own_or_same[i].is_some()).count() as u64;
            let bytes: Option<f64> =
                (with_bytes == calls).then(|| ls.iter().map(|&i| own_or_same[i].unwrap()).sum());
            let peak = math.and_then(|m| m.peak(c));
            let mut missing = Vec::new();
            if source.is_none() && !counted {
                missing.push(format!(
                    "no GEMM shape and no FLOP counters{}",
                    if counters_on {
                        ": not a cuBLAS GEMM, and no launch measured its FLOP counters \
                         (GPUPROF_REPLAY=kernel measures every group on each measured launch)"
                    } else {
                        off
                    }
                ));
            }
            if counted && !complete {
                let mut flop_metrics: Vec<&str> = plan_metrics("GH100")
                    .into_iter()
                    .filter(|m| flop_weight(m).is_some())
                    .collect();
                flop_metrics.sort_unstable();
                let dims = |d: [i32; 3]| format!("{}x{}x{}", d[0], d[1], d[2]);
                let (grid, block) = unmeasured[0];
                missing.push(
                    format!(
                        "no hw FLOPs: FLOP counters never measured on {} of its {} launch \
                     configuration{} (grid {}, block {}: {}{})",
                        unmeasured.len(),
                        configs.len(),
                        if configs.len() == 1 { "" } else { "s" },
                        dims(grid),
                        dims(block),
                        flop_metrics.join(", "),
                        if unmeasured.len() > 1 {
                            "; and others"
                        } else {
                            ""
                        }
                    ) + "; the pass groups rotate over a kernel's launches: a longer run, or \
                     GPUPROF_REPLAY=kernel (every group on each measured launch), gives them",
                );
            }
            if bytes_launches == 0 {
                let none = if calls == 1 {
                    "its launch was not".to_string()
                } else {
                    format!("none of its {calls} launches was")
                };
                let why = if !counters_on {
                    off.to_string()
                } else if ls.iter().all(|&i| launches[i].graph) {
                    format!(
                        ": {none} measured, from CUDA graphs (their kernels get rates fitted to \
                         the PM sampling windows the first graph launch starts, and the windows \
                         did not determine this one: a longer run gives more; \
                         GPUPROF_GRAPH_REPLAY=on measures graph kernels per kernel by kernel \
                         replay, where that cannot harm the graph)"
                    )
                } else {
                    format!(
                        ": {none} measured (one launch at a time per context is, within \
                         GPUPROF_COUNTER_BUDGET; a longer run, GPUPROF_COUNTER_LAUNCHES=0, or \
                         GPUPROF_COUNTERS=sampling)"
                    )
                };
                missing.push(format!("no DRAM counters{why}"));
            } else if bytes.is_none() {
                missing.push(format!(
                    "DRAM bytes for only {with_bytes} of {calls} launches (no launch of the \
                     same launch configuration and GEMM shape measured them; a longer run, or \
                     GPUPROF_COUNTER_LAUNCHES=0, measures each)"
                ));
            }
            let mut p = point(flops, bytes, gpu_ns, peak, Some(c.dram));
            if flops == Some(0.0) && p["mfu_pct"].is_null() && gpu_ns > 0 {
                p.insert("mfu_pct".into(), json!(0.0));
            }
            let mut row = Map::new();
            row.insert("mangled".into(), json!(name));
            row.insert("gpu".into(), json!(H100));
            row.insert(
                "family".into(),
                json!(if gemm { "GEMM" } else { family(name) }),
            );
            row.insert("precision".into(), json!(math.map(Math::precision)));
            row.insert("pipe".into(), json!(math.map(Math::pipe)));
            row.insert("calls".into(), json!(calls));
            row.insert("gpu_ns".into(), json!(gpu_ns));
            row.insert("gemm_launches".into(), json!(shapes.len() as u64));
            row.insert("gemm_part_launches".into(), json!(0u64));
            row.insert("model_flops".into(), num(model_flops));
            row.insert(
                "hw_flops_launches".into(),
                json!(if hw_flops.is_some() { fewest } else { 0 }),
            );
            row.insert("flops_source".into(), json!(source));
            row.insert("bytes".into(), num(bytes));
            row.insert("bytes_launches".into(), json!(bytes_launches));
            row.insert("bytes_source".into(), json!(bytes.map(|_| "measured")));
            row.insert("peak_flops_per_s".into(), num(peak));
            row.insert("dram_bytes_per_s".into(), num(c.dram));
            row.extend(p);
            ExpectedRow {
                row,
                hw_flops,
                gpu_ns,
                missing,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.gpu_ns
            .cmp(&a.gpu_ns)
            .then_with(|| a.row["mangled"].as_str().cmp(&b.row["mangled"].as_str()))
    });
    rows
}

/// The missing list: the kernel rows' entries in row order (kernels named as the report
/// shows them), then "no DRAM counters" for each shape no launch measured.
pub fn expected_missing(r: &Value, rows: &[ExpectedRow], shapes: &[Value]) -> Value {
    let shown = |mangled: &Value| -> Value {
        r["roofline"]["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| &k["mangled"] == mangled)
            .map(|k| k["name"].clone())
            .unwrap_or(Value::Null)
    };
    let mut want: Vec<Value> = Vec::new();
    for row in rows {
        for w in &row.missing {
            want.push(json!({"kernel": shown(&row.row["mangled"]), "gpu": H100, "what": w}));
        }
    }
    for s in shapes.iter().filter(|s| s["bytes"].is_null()) {
        want.push(json!({
            "kernel": format!("GEMM {}", s["shape"].as_str().unwrap()),
            "gpu": H100,
            "what": "no DRAM counters for this GEMM shape",
        }));
    }
    json!(want)
}

pub fn close(got: f64, want: f64) -> bool {
    got == want || ((got - want) / want).abs() <= 1e-12
}

pub fn assert_close(got: &Value, want: Option<f64>, what: &str) {
    match (got.as_f64(), want) {
        (Some(g), Some(w)) => assert!(close(g, w), "{what}: got {g}, want {w}"),
        (None, None) => assert!(got.is_null(), "{what}: {got}"),
        (g, w) => panic!("{what}: got {g:?}, want {w:?}"),
    }
}

/// Asserts the report's kernel rows are `want`, field by field: every field exactly but
/// `hw_flops` (relative 1e-12: a mean scaled back up), `name` (demangled; checked equal
/// to the mangled name for plain C names).
pub fn assert_rows(report: &Value, want: &[ExpectedRow]) {
    let got = report["roofline"]["kernels"]
        .as_array()
        .expect("roofline kernels");
    let got_names: Vec<&str> = got
        .iter()
        .map(|r| r["mangled"].as_str().unwrap_or("?"))
        .collect();
    let want_names: Vec<&str> = want
        .iter()
        .map(|w| w.row["mangled"].as_str().unwrap())
        .collect();
    assert_eq!(got_names, want_names, "kernel rows, by GPU time");
    for (g, w) in got.iter().zip(want) {
        let name = w.row["mangled"].as_str().unwrap();
        let g = g.as_object().expect("row object");
        assert_close(&g["hw_flops"], w.hw_flops, &format!("{name}: hw_flops"));
        if !name.starts_with("_Z") {
            assert_eq!(g["name"], json!(name));
        }
        let mut keys: Vec<&String> = g
            .keys()
            .filter(|k| *k != "hw_flops" && *k != "name")
            .collect();
        keys.sort();
        let mut want_keys: Vec<&String> = w.row.keys().collect();
        want_keys.sort();
        assert_eq!(keys, want_keys, "{name}: fields");
        for k in keys {
            assert_eq!(g[k], w.row[k], "{name}: {k}");
        }
    }
}

/// FLOPs per launch of one kind and the peak of their precision.
#[derive(Debug, Clone, Copy)]
pub struct Flops {
    pub flops: f64,
    pub peak: Option<f64>,
}

/// What one launch adds to a rollup: its model FLOPs (a GEMM's), its hardware FLOPs
/// (where its kernel row has them: every configuration measured), each with its peak,
/// its bytes and its GPU time.
pub struct RollupLaunch {
    pub ns: u64,
    pub model: Option<Flops>,
    pub hw: Option<Flops>,
    pub bytes: Option<f64>,
}

pub fn rollup_launches(launches: &[Priced], c: &Ceilings) -> Vec<RollupLaunch> {
    let bytes = launch_bytes(launches);
    let mut rows: BTreeMap<&str, Vec<&Priced>> = BTreeMap::new();
    for l in launches {
        rows.entry(&l.mangled).or_default().push(l);
    }
    let hw: BTreeMap<&str, RowHw> = rows.iter().map(|(n, ls)| (*n, row_hw(ls))).collect();
    launches
        .iter()
        .zip(bytes)
        .map(|(l, b)| {
            let row = &hw[l.mangled.as_str()];
            // The peak of the math with the most FLOPs on this kernel.
            let hw_peak = most_flops(&row.by_math).and_then(|m| m.peak(c));
            RollupLaunch {
                ns: l.ns,
                model: l.shape.map(|s| Flops {
                    flops: s.flops(),
                    peak: s.math().peak(c),
                }),
                hw: row
                    .complete
                    .then(|| &row.per_launch[&l.config])
                    .map(|by_math| Flops {
                        flops: by_math.values().sum(),
                        peak: hw_peak,
                    }),
                bytes: b,
            }
        })
        .collect()
}

/// One kind of FLOPs of a rollup: utilization = (Σ F_i / P_i) / Σ t_i over the launches
/// whose FLOPs and peak are known, AI = Σ F_i / Σ B_i over those with bytes too,
/// achieved = Σ F_i / Σ t_i over those with FLOPs.
#[derive(Debug, Default)]
pub struct ExpectedFlops {
    pub flops: Option<f64>,
    pub flops_ns: u64,
    pub mfu_ns: u64,
    pub intensity: Option<f64>,
    pub achieved: Option<f64>,
    pub mfu: Option<f64>,
    at_peak: f64,
    ai: (f64, f64),
}

impl ExpectedFlops {
    fn add(&mut self, f: Flops, ns: u64, bytes: Option<f64>) {
        self.flops = Some(self.flops.unwrap_or(0.0) + f.flops);
        self.flops_ns += ns;
        match f.peak {
            Some(p) => {
                self.at_peak += f.flops / p;
                self.mfu_ns += ns;
            }
            None if f.flops == 0.0 => self.mfu_ns += ns,
            None => {}
        }
        if let Some(b) = bytes {
            self.ai.0 += f.flops;
            self.ai.1 += b;
        }
    }

    fn finish(&mut self) {
        let per_ns = |sum: f64, ns: u64| (ns > 0).then(|| sum * 1e9 / ns as f64);
        self.achieved = self.flops.and_then(|f| per_ns(f, self.flops_ns));
        self.mfu = per_ns(self.at_peak, self.mfu_ns);
        self.intensity = (self.ai.1 > 0.0).then(|| self.ai.0 / self.ai.1);
    }
}

/// rollup.rs's rollup: model FLOPs (MFU) and hardware FLOPs (HFU) each over its own
/// launches, MBU = (Σ B_i / W) / Σ t_i over those with bytes.
pub struct ExpectedRollup {
    pub launches: u64,
    pub gpu_ns: u64,
    pub model: ExpectedFlops,
    pub hw: ExpectedFlops,
    pub bytes: f64,
    pub bytes_ns: u64,
    pub mbu_ns: u64,
    pub mbu: Option<f64>,
}

pub fn expected_rollup<'a>(
    ls: impl Iterator<Item = &'a RollupLaunch>,
    c: &Ceilings,
) -> ExpectedRollup {
    let mut r = ExpectedRollup {
        launches: 0,
        gpu_ns: 0,
        model: ExpectedFlops::default(),
        hw: ExpectedFlops::default(),
        bytes: 0.0,
        bytes_ns: 0,
        mbu_ns: 0,
        mbu: None,
    };
    let mut at_bw = 0.0;
    for l in ls {
        r.launches += 1;
        r.gpu_ns += l.ns;
        if let Some(f) = l.model {
            r.model.add(f, l.ns, l.bytes);
        }
        if let Some(f) = l.hw {
            r.hw.add(f, l.ns, l.bytes);
        }
        if let Some(b) = l.bytes {
            r.bytes += b;
            r.bytes_ns += l.ns;
            r.mbu_ns += l.ns;
            at_bw += b / c.dram;
        }
    }
    r.model.finish();
    r.hw.finish();
    r.mbu = (r.mbu_ns > 0).then(|| at_bw * 1e9 / r.mbu_ns as f64);
    r
}

/// Asserts one kind of FLOPs of a rollup row: times and model FLOPs exactly, hardware
/// FLOPs, AI and achieved FLOP/s to 1e-12 (sums of per-launch terms in another
/// grouping), the utilization as a rounded percentage; AI only when `with_bytes`.
fn assert_flops(
    got: &Value,
    want: &ExpectedFlops,
    kind: (&str, &str),
    with_bytes: bool,
    what: &str,
) {
    let (flops, util) = kind;
    let field = |f: &str| format!("{flops}_{f}");
    assert_eq!(
        got[field("flops_ns")],
        json!(want.flops_ns),
        "{what}: {flops} flops_ns"
    );
    if flops == "model" {
        assert_eq!(got[field("flops")], num(want.flops), "{what}: model_flops");
    } else {
        assert_close(
            &got[field("flops")],
            want.flops,
            &format!("{what}: hw_flops"),
        );
    }
    assert_close(
        &got[field("achieved_flops_per_s")],
        want.achieved,
        &format!("{what}: {flops} achieved"),
    );
    assert_eq!(
        got[format!("{util}_pct")],
        pct(want.mfu),
        "{what}: {util}_pct"
    );
    assert_eq!(
        got[format!("{util}_ns")],
        json!(want.mfu_ns),
        "{what}: {util}_ns"
    );
    if with_bytes {
        assert_close(
            &got[field("intensity")],
            want.intensity,
            &format!("{what}: {flops} intensity"),
        );
    }
}

/// Asserts a rollup row: counts and times exactly, each kind of FLOPs as
/// [`assert_flops`], MBU as a rounded percentage; byte fields only when `with_bytes`.
pub fn assert_rollup(got: &Value, want: &ExpectedRollup, with_bytes: bool, what: &str) {
    assert_eq!(got["launches"], json!(want.launches), "{what}: launches");
    assert_eq!(got["gpu_ns"], json!(want.gpu_ns), "{what}: gpu_ns");
    assert_flops(got, &want.model, ("model", "mfu"), with_bytes, what);
    assert_flops(got, &want.hw, ("hw", "hfu"), with_bytes, what);
    if with_bytes {
        assert_eq!(got["mbu_ns"], json!(want.mbu_ns), "{what}: mbu_ns");
        let bytes = (want.bytes_ns > 0).then_some(want.bytes);
        assert_eq!(got["bytes"], num(bytes), "{what}: bytes");
        assert_eq!(got["bytes_ns"], json!(want.bytes_ns), "{what}: bytes_ns");
        assert_eq!(got["mbu_pct"], pct(want.mbu), "{what}: mbu_pct");
    }
}

/// verdict.rs's rules (its module documentation's table) on shape `s` run by
/// `kernels`, with `(FLOPs, bytes, GPU ns, peak)` in `math`: the bound against the
/// ridge and the ceiling's 60%, the pipe the kernel's counters put its FLOPs on
/// (`counted`) against the shape's, then the fill of the CTA tile a `tilesize` kernel
/// name gives, when under 90%.
fn expected_verdicts(
    s: &Shape,
    (flops, bytes, ns, peak): (f64, Option<f64>, u64, Option<f64>),
    (math, counted): (Math, Option<Math>),
    c: &Ceilings,
    kernels: &[&str],
) -> Value {
    let mut out = Vec::new();
    let pct = |f: f64| format!("{:.1}%", f * 100.0);
    if let (Some(b), Some(p)) = (bytes.filter(|b| *b > 0.0), peak) {
        let (ai, ridge) = (flops / b, p / c.dram);
        let secs = ns as f64 * 1e-9;
        let (mbu, mfu) = (b / secs / c.dram, flops / secs / p);
        let peak = format!("{} {}", math.precision(), math.pipe());
        out.push(
            match (ai < ridge, if ai < ridge { mbu } else { mfu } >= 0.6) {
                (true, true) => (
                    "memory_bound",
                    format!(
                "memory-bound at {} of DRAM peak (AI {ai:.1} < ridge {ridge:.1}): more tokens \
                 per call raise its AI", pct(mbu)),
                ),
                (true, false) => (
                    "memory_bound_slow",
                    format!(
                "memory-bound but at {} of DRAM peak: not bandwidth-limited; see its launch \
                 shape", pct(mbu)),
                ),
                (false, true) => (
                    "compute_bound",
                    format!("compute-bound at {} of the {peak} peak", pct(mfu)),
                ),
                (false, false) => (
                    "compute_bound_slow",
                    format!(
                "compute-bound but at {} of the {peak} peak: see tile padding and its launch \
                 shape", pct(mfu)),
                ),
            },
        );
    }
    if let Some(hw) = counted.filter(|hw| math.pipe() == "tensor" && hw.pipe() == "CUDA cores") {
        let name = |m: Math| format!("{} {}", m.precision(), m.pipe());
        let ceiling = hw.peak(c).map_or_else(String::new, |p| {
            format!(": its ceiling is the {}' {:.1} TFLOP/s", name(hw), p / 1e12)
        });
        out.push((
            "off_tensor_pipe",
            format!(
                "its kernel's FLOPs ran on the {} (counters), not the {}{ceiling}",
                name(hw),
                name(math)
            ),
        ));
    }
    let tile = kernels.iter().find_map(|k| {
        let dims = &k[k.find("tilesize")? + "tilesize".len()..];
        let mut d = dims.split('x').map(|x| x.parse::<u64>().ok());
        Some((d.next()??, d.next()??))
    });
    if let Some((tm, tn)) = tile {
        let (pm, pn) = (s.m.div_ceil(tm) * tm, s.n.div_ceil(tn) * tn);
        let fill = (s.m * s.n) as f64 / (pm * pn) as f64;
        if fill < 0.9 {
            out.push((
                "tile_padding",
                format!(
                    "tile {tm}x{tn} (kernel name): the GEMM fills {} of its tiles (M, out: {} of \
                 {pm}; N, tokens: {} of {pn})",
                    pct(fill),
                    s.m,
                    s.n
                ),
            ));
        }
    }
    json!(out
        .iter()
        .map(|(rule, text)| json!({"rule": rule, "text": text}))
        .collect::<Vec<_>>())
}

/// The shape rows: per shape, its launches' time, model FLOPs and bytes (null when no
/// launch of the shape measured them), by GPU time.
pub fn expected_shapes(launches: &[Priced], c: &Ceilings, report: &Value) -> Vec<Value> {
    // Kernels are listed by their demangled names, as the kernel rows show them.
    let shown: BTreeMap<&str, &str> = report["roofline"]["kernels"]
        .as_array()
        .expect("roofline kernels")
        .iter()
        .map(|k| (k["mangled"].as_str().unwrap(), k["name"].as_str().unwrap()))
        .collect();
    let bytes = launch_bytes(launches);
    let mut by_shape: BTreeMap<Shape, Vec<usize>> = BTreeMap::new();
    for (i, l) in launches.iter().enumerate() {
        if let Some(s) = l.shape {
            by_shape.entry(s).or_default().push(i);
        }
    }
    let mut rows: Vec<(u64, Shape, Value)> = by_shape
        .into_iter()
        .map(|(s, ls)| {
            let gpu_ns: u64 = ls.iter().map(|&i| launches[i].ns).sum();
            let model_flops: f64 = ls.iter().map(|_| s.flops()).sum();
            let bytes_launches = ls
                .iter()
                .filter(|&&i| launches[i].counters.is_some())
                .count() as u64;
            let b: Option<f64> = ls
                .iter()
                .map(|&i| bytes[i])
                .sum::<Option<f64>>()
                .filter(|_| bytes_launches > 0);
            let math = s.math();
            let mut kernels: Vec<&str> = ls
                .iter()
                .map(|&i| shown[launches[i].mangled.as_str()])
                .collect();
            kernels.sort();
            kernels.dedup();
            let t = s.type_name();
            let mut row = json!({
                "shape": s.label(),
                "gpu": H100,
                "m": s.m,
                "n": s.n,
                "k": s.k,
                "batch": s.batch,
                "a_type": t,
                "b_type": t,
                "c_type": t,
                "d_type": t,
                "compute_type": s.compute_name(),
                "trans_a": op_name(s.ops.0),
                "trans_b": op_name(s.ops.1),
                "precision": math.precision(),
                "pipe": math.pipe(),
                "calls": ls.len() as u64,
                "launches": ls.len() as u64,
                "gpu_ns": gpu_ns,
                "model_flops": model_flops,
                "bytes": b,
                "bytes_launches": bytes_launches,
                "bytes_source": b.map(|_| "measured"),
                "peak_flops_per_s": math.peak(c),
                "dram_bytes_per_s": c.dram,
                "kernels": kernels,
            });
            let p = point(Some(model_flops), b, gpu_ns, math.peak(c), Some(c.dram));
            row.as_object_mut().unwrap().extend(p);
            let at = (model_flops, b, gpu_ns, math.peak(c));
            // The precision its longest-running kernel's FLOP counters put most FLOPs
            // on (that kernel's launches of every shape: the kernel row's).
            let by_kernel = |name: &str| -> Vec<&Priced> {
                launches.iter().filter(|l| l.mangled == name).collect()
            };
            let longest = ls
                .iter()
                .map(|&i| launches[i].mangled.as_str())
                .max_by_key(|name| by_kernel(name).iter().map(|l| l.ns).sum::<u64>());
            let counted = longest.and_then(|name| {
                let hw = row_hw(&by_kernel(name));
                hw.complete.then(|| most_flops(&hw.by_math)).flatten()
            });
            row["verdicts"] = expected_verdicts(&s, at, (math, counted), c, &kernels);
            (gpu_ns, s, norm(row))
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    rows.into_iter().map(|(_, _, v)| v).collect()
}
