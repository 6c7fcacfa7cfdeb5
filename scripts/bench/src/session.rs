//! A generated session of an LLM-serving process, written through the production
//! [`StoreWriter`] (the real format: sealed parts, manifests), for the data-path
//! benchmarks at sizes no simulated run reaches quickly.
//!
//!   gpuprof-bench session --kernels N -o DIR [--counter-every N] [--seed N]
//!
//! The process serves a Llama-3-8B-shaped model (32 layers, hidden 4096, MLP 14336,
//! vocabulary 128256, BF16) on one H100 with continuous batching: every step is a
//! prefill (one in eight, 128 to 4096 prompt tokens) or a decode step (a batch that
//! wanders between 1 and 256 sequences), inside an NVTX range "prefill" or "decode".
//! A step launches per layer an RMS norm, the QKV GEMM, rotary embedding, the KV-cache
//! write, attention (flash for prefill, paged for decode), the output GEMM, a fused
//! residual add and norm, the gate/up GEMM, SiLU-and-multiply and the down GEMM;
//! then the final norm, the LM head GEMM and three sampling kernels; a host-to-device
//! copy of the token ids before and a device-to-host copy of the sampled tokens after.
//! Each kernel has its `Launch` record (the driver API call on the serving thread),
//! each GEMM its `Gemm` record (cuBLAS's shape), and every `--counter-every`th launch
//! of a kernel (name, grid, block) its `KernelCounters` of one pass group, the groups
//! taken in turn as the range profiler rotates them (the GH100 default groups).
//!
//! Times are what a busy GPU shows: kernels back to back on one stream with gaps of
//! about a microsecond, durations from the shapes (memory- or FLOP-bound) with a few
//! per cent of noise, launch calls of 2 to 8 µs on the CPU; counter values follow the
//! kernel's work with the same noise. Everything comes from a seeded generator, so a
//! seed gives the same bytes.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use gpuprof_collector::store::{PartLimits, StoreWriter};
use wire::record::*;

/// SplitMix64: small, fast, and the same sequence everywhere for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi].
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// `x` times a factor of about 1 +- `spread` (a triangular distribution).
    fn noisy(&mut self, x: f64, spread: f64) -> f64 {
        x * (1.0 + spread * (self.unit() + self.unit() - 1.0))
    }
}

const PID: u32 = 4242;
const T0: u64 = 1_764_000_000_000_000_000;
/// `CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel`.
const CBID_LAUNCH_KERNEL: u32 = 307;
/// `CUDA_R_16BF`, `CUBLAS_COMPUTE_32F`.
const BF16: u32 = 14;
const COMPUTE_32F: u32 = 68;

// The model.
const LAYERS: usize = 32;
const HIDDEN: u64 = 4096;
const QKV: u64 = 6144;
const FFN: u64 = 14336;
const VOCAB: u64 = 128_256;
/// Bytes per second and FLOP per second the durations are priced at.
const DRAM_BPS: f64 = 3.0e12;
const TENSOR_FLOPS: f64 = 7.0e14;

/// The kernels a step launches, each with its string id.
#[derive(Clone, Copy, PartialEq, Eq)]
enum K {
    Embed,
    RmsNorm,
    GemmQkv,
    Rotary,
    CacheWrite,
    FlashAttn,
    PagedAttn,
    GemmO,
    AddNorm,
    GemmGateUp,
    SiluMul,
    GemmDown,
    GemmLmHead,
    Softmax,
    TopP,
    Sample,
}

/// (kernel, mangled name, registers, static shared, dynamic shared)
const KERNELS: &[(K, &str, u16, i32, i32)] = &[
    (K::Embed, "_ZN4vllm15embedding_kernelIN3c108BFloat16EEEvPT_PKlPKS3_ii", 32, 0, 0),
    (K::RmsNorm, "_ZN4vllm15rms_norm_kernelIN3c108BFloat16ELi8ELi1EEEvPT_PKS3_lllS6_fii", 40, 128, 0),
    (K::GemmQkv, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 168, 0, 196_608),
    (K::Rotary, "_ZN4vllm23rotary_embedding_kernelIN3c108BFloat16ELb1EEEvPKlPT_S6_PKS5_iliiii", 38, 0, 0),
    (K::CacheWrite, "_ZN4vllm24reshape_and_cache_kernelI14__nv_bfloat16S1_LNS_18Fp8KVCacheDataTypeE0EEEvPKT_S6_PT0_S8_PKliiiiiiPKfSC_", 30, 0, 0),
    (K::FlashAttn, "_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass10bfloat16_tEELb1ELb0ELb0ELb0ELb1ELb1ELb0ELb0EEEv16Flash_fwd_params", 255, 0, 98_304),
    (K::PagedAttn, "_ZN4vllm25paged_attention_v2_kernelI14__nv_bfloat16S1_Li128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb0ELi512EEEvPfS3_PT_PKS4_PKT0_SA_ifPKiSC_iPKfiiiSE_SE_", 128, 0, 2_064),
    (K::GemmO, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 168, 0, 147_456),
    (K::AddNorm, "_ZN4vllm25fused_add_rms_norm_kernelIN3c108BFloat16ELi8EEENSt9enable_ifIXaagtT0_Li0Esr12_typeConvertIT_EE6existsEvE4typeEPS5_lS8_PKS5_fii", 40, 128, 0),
    (K::GemmGateUp, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", 168, 0, 229_376),
    (K::SiluMul, "_ZN4vllm18act_and_mul_kernelIN3c108BFloat16EXadL_ZNS_11silu_kernelIS2_EET_RKS4_EELb1EEEvPS4_PS5_i", 24, 0, 0),
    (K::GemmDown, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", 168, 0, 229_376),
    (K::GemmLmHead, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_on_kernel__5x_cublas", 168, 0, 229_376),
    (K::Softmax, "_ZN2at6native43_GLOBAL__N__softmax_warp_forwardIfffLi11ELb0ELb0EEEvPT0_PKT_iiiPKbib", 48, 0, 0),
    (K::TopP, "_ZN2at6native24radixSortKVInPlaceIfliiEEvNS_4cuda6detail10TensorInfoIT_T2_EES6_S6_S6_NS4_IT0_S6_EES6_b", 64, 8_192, 0),
    (K::Sample, "_ZN2at6native27distribution_elementwise_grid_stride_kernelIfLi4EEEviNS_15PhiloxCudaStateET1_T2_", 32, 0, 0),
];

/// String ids: kernels from 1, then these.
const S_PREFILL: u32 = 101;
const S_DECODE: u32 = 102;
const S_GEMM_EX: u32 = 103;
/// Metric names from 201 (the GH100 default groups, in group order).
const METRICS: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_op_hgmma_src_fp16.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__cycles_active.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "lts__t_sectors_lookup_hit.sum",
    "gpu__time_duration.sum",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
    "lts__t_sectors_lookup_miss.sum",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
    "sm__ops_path_tensor_src_fp64.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
];
const METRIC_BASE: u32 = 201;
/// Pass groups: counts of consecutive metrics of [`METRICS`].
const GROUPS: &[usize] = &[9, 2, 3, 1, 9];

fn kernel_info(k: K) -> (u32, u16, i32, i32) {
    let i = KERNELS
        .iter()
        .position(|(x, ..)| *x == k)
        .expect("every kernel is listed");
    let (_, _, regs, st, dy) = KERNELS[i];
    (i as u32 + 1, regs, st, dy)
}

/// What a launch does: its kernel, its GEMM shape (m, n, k) if it is one, its grid
/// and block, and the bytes and FLOPs it moves.
struct Work {
    kernel: K,
    gemm: Option<(u64, u64, u64)>,
    grid: [i32; 3],
    block: [i32; 3],
    bytes: f64,
    flops: f64,
}

fn gemm(kernel: K, m: u64, n: u64, k: u64) -> Work {
    let tile_m = 128u64;
    let tile_n = if n <= 64 { 64 } else { 128 };
    Work {
        kernel,
        gemm: Some((m, n, k)),
        grid: [m.div_ceil(tile_m) as i32, n.div_ceil(tile_n) as i32, 1],
        block: [384, 1, 1],
        bytes: 2.0 * (m * k + k * n + m * n) as f64,
        flops: 2.0 * (m * n * k) as f64,
    }
}

fn elementwise(kernel: K, tokens: u64, width: u64, block: i32) -> Work {
    Work {
        kernel,
        gemm: None,
        grid: [tokens.min(65_535) as i32, 1, 1],
        block: [block, 1, 1],
        bytes: 4.0 * (tokens * width) as f64,
        flops: 4.0 * (tokens * width) as f64,
    }
}

/// The launches of one step over `tokens` tokens (a prefill's prompt or a decode
/// batch), attention over `context` cached tokens per sequence.
fn step(prefill: bool, tokens: u64, context: u64) -> Vec<Work> {
    let mut w = vec![elementwise(K::Embed, tokens, HIDDEN, 256)];
    for _ in 0..LAYERS {
        w.push(elementwise(K::RmsNorm, tokens, HIDDEN, 1024));
        w.push(gemm(K::GemmQkv, QKV, tokens, HIDDEN));
        w.push(elementwise(K::Rotary, tokens, QKV - HIDDEN / 2, 256));
        w.push(elementwise(K::CacheWrite, tokens, 2 * 1024, 256));
        w.push(if prefill {
            Work {
                kernel: K::FlashAttn,
                gemm: None,
                grid: [tokens.div_ceil(128) as i32, 32, 1],
                block: [128, 1, 1],
                bytes: 2.0 * (tokens * QKV) as f64,
                flops: 4.0 * (tokens * tokens * HIDDEN) as f64 / 2.0,
            }
        } else {
            Work {
                kernel: K::PagedAttn,
                gemm: None,
                grid: [32, tokens as i32, context.div_ceil(512) as i32],
                block: [128, 1, 1],
                bytes: 2.0 * (tokens * context * 2 * 1024) as f64,
                flops: 4.0 * (tokens * context * HIDDEN) as f64,
            }
        });
        w.push(gemm(K::GemmO, HIDDEN, tokens, HIDDEN));
        w.push(elementwise(K::AddNorm, tokens, HIDDEN, 1024));
        w.push(gemm(K::GemmGateUp, 2 * FFN, tokens, HIDDEN));
        w.push(elementwise(K::SiluMul, tokens, FFN, 1024));
        w.push(gemm(K::GemmDown, HIDDEN, tokens, FFN));
    }
    w.push(elementwise(K::RmsNorm, tokens, HIDDEN, 1024));
    // Logits only for the last token of each sequence.
    let seqs = if prefill { 1 } else { tokens };
    w.push(gemm(K::GemmLmHead, VOCAB, seqs, HIDDEN));
    w.push(elementwise(K::Softmax, seqs, VOCAB, 128));
    w.push(elementwise(K::TopP, seqs, VOCAB, 1024));
    w.push(elementwise(K::Sample, seqs, 1, 256));
    w
}

/// Kernels per step, for the arithmetic of the step count.
const KERNELS_PER_STEP: u64 = 1 + 10 * LAYERS as u64 + 5;

fn duration_ns(rng: &mut Rng, w: &Work) -> u64 {
    let ns = (w.bytes / DRAM_BPS).max(w.flops / TENSOR_FLOPS) * 1e9;
    rng.noisy(ns + 1_500.0, 0.04) as u64
}

/// The counter values of one pass group for one launch of `w` lasting `dur` ns.
fn counter_values(rng: &mut Rng, w: &Work, dur: u64, group: usize) -> Vec<MetricValue> {
    let first: usize = GROUPS[..group].iter().sum();
    let d = dur as f64;
    let gemm = w.gemm.is_some();
    let sectors = |rng: &mut Rng, b: f64| (rng.noisy(b, 0.03) / 32.0).round() * 32.0;
    (first..first + GROUPS[group])
        .map(|i| {
            let v = match i {
                0 => sectors(rng, w.bytes * 0.9),
                1 => sectors(rng, w.bytes * 0.1),
                2 if gemm => w.flops,
                5 => (rng.noisy(d * 1.755 * 0.8, 0.03) * 100.0).round() / 100.0,
                6 => rng.noisy(if gemm { 12.5 } else { 45.0 }, 0.1),
                7 => (rng.noisy(w.bytes * 0.3, 0.05) / 32.0).round(),
                8 => d,
                10 => (rng.noisy(w.bytes * 0.7, 0.05) / 32.0).round(),
                13 if gemm => rng.noisy(65.0, 0.08),
                15..=17 if !gemm => rng.noisy(w.flops / 2.0, 0.01).round(),
                18..=20 => rng.noisy(w.flops / 16.0, 0.01).round(),
                _ => 0.0,
            };
            MetricValue {
                name: METRIC_BASE + i as u32,
                value: v,
            }
        })
        .collect()
}

/// "every launch", "every 2nd launch", ...
pub fn every_nth(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    if n == 1 {
        "every launch".into()
    } else {
        format!("every {n}{suffix} launch")
    }
}

/// The records a process writes before its first launch.
fn preamble(counter_every: u64) -> Vec<Record> {
    let mut r = vec![
        Record::Process(Box::new(ProcessInfo {
            pid: PID,
            ppid: PID - 1,
            command: [
                "python3",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "meta-llama/Llama-3.1-8B-Instruct",
            ]
            .map(String::from)
            .to_vec(),
            host: "gpu-node-17".into(),
            start_ns: T0 - 30_000_000_000,
            profiler_version: env!("CARGO_PKG_VERSION").into(),
            cupti_api_version: 130_401,
            cupti_layouts: "13.4".into(),
            cupti_path: "/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13".into(),
            environment: vec!["RANK=0".into(), "WORLD_SIZE=1".into()],
        })),
        Record::Device(DeviceInfo {
            id: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            core_clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_width_bits: 5120,
            global_memory_bytes: 85_899_345_920,
            l2_cache_bytes: 52_428_800,
            uuid: [
                0x5a, 0x1c, 0x0d, 0xa0, 0x90, 0, 0x4e, 0x11, 0x80, 0, 0x51, 0xc0, 0x3b, 0x2f, 0x71,
                0x09,
            ],
        }),
        Record::Context(ContextInfo {
            context_id: 1,
            device_id: 0,
        }),
    ];
    let string = |id: u32, text: &str| {
        Record::String(InternedString {
            id,
            text: text.into(),
        })
    };
    for (i, (_, name, ..)) in KERNELS.iter().enumerate() {
        r.push(string(i as u32 + 1, name));
    }
    r.push(string(S_PREFILL, "prefill"));
    r.push(string(S_DECODE, "decode"));
    r.push(string(S_GEMM_EX, "cublasGemmEx"));
    for (i, m) in METRICS.iter().enumerate() {
        r.push(string(METRIC_BASE + i as u32, m));
    }
    let mut groups = Vec::new();
    let mut at = METRIC_BASE;
    for &n in GROUPS {
        groups.push((at..at + n as u32).collect());
        at += n as u32;
    }
    r.push(Record::CounterPlan(Box::new(CounterPlan {
        device_id: 0,
        chip: "GH100".into(),
        mode: "kernel".into(),
        groups,
        policy: format!(
            "{} of each kernel (name, grid, block); successive measured launches rotate \
             through {} pass groups",
            every_nth(counter_every),
            GROUPS.len()
        ),
    })));
    r
}

/// The session being written: parts sealed as the collector seals them.
struct Sink {
    store: StoreWriter,
    records: u64,
}

impl Sink {
    fn push(&mut self, r: &Record) -> Result<()> {
        self.store.push(PID, r);
        self.records += 1;
        if self.store.due() {
            self.store
                .seal()
                .map_err(|f| f.error)
                .context("sealing a part")?;
        }
        Ok(())
    }
}

/// What the generator wrote.
pub struct Generated {
    pub kernels: u64,
    pub records: u64,
    pub parts: u64,
    pub bytes: u64,
    pub seconds: f64,
}

/// Writes a session of at least `kernels` kernels (whole steps) into the empty or
/// absent directory `dir`.
pub fn generate(dir: &Path, kernels: u64, counter_every: u64, seed: u64) -> Result<Generated> {
    let started = std::time::Instant::now();
    if dir.exists() {
        if std::fs::read_dir(dir)?.next().is_some() {
            bail!("{}: not empty", dir.display());
        }
    } else {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let limits = PartLimits {
        // Parts by rows only, as a busy collector seals them, whatever this machine's
        // speed.
        age: Duration::from_secs(365 * 24 * 3600),
        ..PartLimits::default()
    };
    let mut w = Sink {
        store: StoreWriter::create(dir, limits)
            .with_context(|| format!("cannot start a session in {}", dir.display()))?,
        records: 0,
    };
    for r in preamble(counter_every) {
        w.push(&r)?;
    }

    let mut rng = Rng(seed);
    let mut correlation = 100u32;
    let mut gemm_calls = 0u64;
    let mut marker_id = 0u32;
    let mut cpu = T0; // the serving thread's clock
    let mut gpu = T0; // when the stream is next free
    let mut batch = 64u64;
    let mut context = 512u64;
    let mut measured_group = 0usize;
    // Launches so far per kernel key (kernel, grid, block), for every Nth.
    let mut launches_of: std::collections::HashMap<(u32, [i32; 3], [i32; 3]), u64> =
        std::collections::HashMap::new();
    let mut done = 0u64;
    let mut pending: Vec<Record> = Vec::new();
    while done < kernels {
        let prefill = rng.range(0, 7) == 0;
        let tokens = if prefill {
            rng.range(128, 4096)
        } else {
            batch = (batch as i64 + rng.range(0, 8) as i64 - 4).clamp(1, 256) as u64;
            batch
        };
        context = if prefill {
            tokens
        } else {
            (context + rng.range(0, 16)).min(8192)
        };
        marker_id += 1;
        cpu += rng.range(20_000, 80_000); // the scheduler between steps
        w.push(&Record::Marker(Marker {
            flags: marker_flags::START,
            timestamp_ns: cpu,
            id: marker_id,
            thread_id: PID as u64,
            process_id: PID,
            name: if prefill { S_PREFILL } else { S_DECODE },
            domain: 0,
        }))?;
        // The token ids in.
        correlation += 1;
        cpu += rng.range(3_000, 9_000);
        let copy_in = cpu.max(gpu) + rng.range(800, 2_000);
        let copy_in_end = copy_in + 1_200 + tokens * 4 / 20;
        gpu = copy_in_end;
        pending.push(Record::Memcpy(Memcpy {
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            correlation_id: correlation,
            start_ns: copy_in,
            end_ns: copy_in_end,
            bytes: tokens * 8,
            copy_kind: 1,
            src_kind: 2,
            dst_kind: 3,
            graph_node_id: 0,
        }));
        for work in step(prefill, tokens, context) {
            let (name, regs, st, dy) = kernel_info(work.kernel);
            // cuBLAS makes a few API calls of its own before its launch.
            correlation += if work.gemm.is_some() {
                rng.range(2, 4) as u32
            } else {
                1
            };
            let launch_start = cpu + rng.range(300, 1_500);
            let launch_end = launch_start + rng.noisy(4_000.0, 0.5) as u64;
            cpu = launch_end;
            w.push(&Record::Launch(Launch {
                correlation_id: correlation,
                cbid: CBID_LAUNCH_KERNEL,
                runtime: false,
                thread_id: PID as u64,
                start_ns: launch_start,
                end_ns: launch_end,
            }))?;
            if let Some((m, n, k)) = work.gemm {
                gemm_calls += 1;
                w.push(&Record::Gemm(Gemm {
                    correlation_id: correlation,
                    call: gemm_calls,
                    launch_index: 0,
                    api: S_GEMM_EX,
                    m,
                    n,
                    k,
                    batch: 1,
                    trans_a: 1,
                    trans_b: 0,
                    a_type: BF16,
                    b_type: BF16,
                    c_type: BF16,
                    d_type: BF16,
                    compute_type: COMPUTE_32F,
                }))?;
            }
            let start = gpu.max(launch_start + 4_000) + rng.range(600, 1_800);
            let dur = duration_ns(&mut rng, &work);
            gpu = start + dur;
            pending.push(Record::Kernel(Kernel {
                device_id: 0,
                context_id: 1,
                stream_id: 7,
                correlation_id: correlation,
                start_ns: start,
                end_ns: start + dur,
                name,
                grid: work.grid,
                block: work.block,
                registers_per_thread: regs,
                static_shared_memory: st,
                dynamic_shared_memory: dy,
                graph_id: 0,
                graph_node_id: 0,
            }));
            let n = launches_of
                .entry((name, work.grid, work.block))
                .or_default();
            *n += 1;
            if (*n - 1).is_multiple_of(counter_every) {
                pending.push(Record::KernelCounters(KernelCounters {
                    correlation_id: correlation,
                    group: measured_group as u32,
                    metrics: counter_values(&mut rng, &work, dur, measured_group),
                    range: 0,
                }));
                measured_group = (measured_group + 1) % GROUPS.len();
            }
            done += 1;
        }
        // The sampled tokens out: the host waits for them.
        correlation += 1;
        let copy_out = gpu + rng.range(800, 2_000);
        gpu = copy_out + 1_200 + tokens * 4 / 20;
        pending.push(Record::Memcpy(Memcpy {
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            correlation_id: correlation,
            start_ns: copy_out,
            end_ns: gpu,
            bytes: if prefill { 4 } else { tokens * 4 },
            copy_kind: 2,
            src_kind: 3,
            dst_kind: 2,
            graph_node_id: 0,
        }));
        cpu = cpu.max(gpu) + rng.range(2_000, 6_000);
        w.push(&Record::Marker(Marker {
            flags: marker_flags::END,
            timestamp_ns: cpu,
            id: marker_id,
            thread_id: PID as u64,
            process_id: PID,
            name: 0,
            domain: 0,
        }))?;
        // CUPTI's activity records arrive in buffers, after the launches.
        for r in pending.drain(..) {
            w.push(&r)?;
        }
    }
    w.push(&Record::End(End { records: w.records }))?;
    let mut store = w.store;
    store
        .seal()
        .map_err(|f| f.error)
        .context("sealing the last part")?;
    store.finish().context("finishing the session")?;
    Ok(Generated {
        kernels: done,
        records: w.records,
        parts: store.parts(),
        bytes: store.bytes_written(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Steps needed for `kernels` kernels.
pub fn steps_for(kernels: u64) -> u64 {
    kernels.div_ceil(KERNELS_PER_STEP)
}

pub fn run(args: &[String]) -> Result<()> {
    let kernels: u64 = crate::flag(args, "--kernels")?.context("--kernels N is required")?;
    let dir: std::path::PathBuf = crate::flag(args, "-o")?.context("-o DIR is required")?;
    let every: u64 = crate::flag(args, "--counter-every")?.unwrap_or(10);
    let seed: u64 = crate::flag(args, "--seed")?.unwrap_or(1);
    if kernels == 0 || every == 0 {
        bail!("--kernels and --counter-every need a positive number");
    }
    let g = generate(&dir, kernels, every, seed)?;
    println!(
        "session: {} kernels ({} steps), {} records, {} parts, {} bytes ({:.2} per kernel) in {:.1} s ({:.2} M records/s) -> {}",
        g.kernels,
        steps_for(kernels),
        g.records,
        g.parts,
        g.bytes,
        g.bytes as f64 / g.kernels as f64,
        g.seconds,
        g.records as f64 / g.seconds / 1e6,
        dir.display()
    );
    Ok(())
}
