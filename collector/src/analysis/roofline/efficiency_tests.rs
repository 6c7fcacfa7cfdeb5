//! The roofline analysis of a hand-built session with exact expected values.

use wire::marker_flags;
use wire::testing::{device, gemm, k, launch, marker, process, string};

use super::*;
use crate::analysis::flop_metrics::flop_metric;
use crate::analysis::precision::Precision;
use crate::analysis::roofline::Bound;

const H100: &str = "NVIDIA H100 80GB HBM3";
const H100_BF16: f64 = 989.4e12;
const H100_FP32: f64 = 67e12;
const H100_BW: f64 = 3.35e12;

// Interned strings of pid 1.
const GEMM_KERNEL: u32 = 1;
const SPLIT_K: u32 = 2;
const RMS_NORM: u32 = 3;
const FLASH: u32 = 4;
const WORKER: u32 = 5;
const READ: u32 = 6;
const WRITE: u32 = 7;
const TENSOR_BF16: u32 = 8;
const FFMA: u32 = 9;
const FADD: u32 = 10;
const PREFILL: u32 = 20;
const DECODE: u32 = 21;

fn counters(corr: u32, metrics: &[(u32, f64)]) -> Record {
    wire::testing::counters(corr, 0, metrics)
}

/// pid 1 on an H100 SXM: a prefill range with a 4096³ BF16 GEMM, an RMS norm and a
/// flash attention kernel; a decode range with a 4096x1x4096 GEMM in two launches
/// (main kernel + split-K reduction), an RMS norm without counters and a kernel
/// without anything. pid 2: one kernel on a GPU with no peaks.
fn session() -> Vec<(u32, Record)> {
    let mut r: Vec<Record> = vec![
        process(1, "./llm"),
        Record::Device(device(H100, (9, 0), 132, 1_980_000)),
        string(GEMM_KERNEL, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
        string(SPLIT_K, "splitKreduce_kernel"),
        string(RMS_NORM, "rms_norm_kernel"),
        string(FLASH, "flash_fwd_kernel"),
        string(WORKER, "worker_kernel"),
        string(READ, "dram__bytes_read.sum"),
        string(WRITE, "dram__bytes_write.sum"),
        string(TENSOR_BF16, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
        string(FFMA, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
        string(FADD, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"),
        string(PREFILL, "prefill"),
        string(DECODE, "decode"),
        string(90, "cublasLtMatmul"),
        marker(marker_flags::START, 1, 0, 0, PREFILL, 0),
        marker(marker_flags::END, 1, 0, 1_000_000, 0, 0),
        marker(marker_flags::START, 2, 0, 1_000_000, DECODE, 0),
        marker(marker_flags::END, 2, 0, 2_000_000, 0, 0),
        // Prefill.
        gemm(1, 1, 0, 4096, 4096, 4096),
        launch(1, 7, 0, 10),
        k(GEMM_KERNEL, 1, 0, 160_000),
        counters(1, &[(READ, 67_108_864.0), (WRITE, 33_554_432.0)]),
        k(RMS_NORM, 2, 200_000, 210_000),
        counters(
            2,
            &[
                (READ, 1_000_000.0),
                (WRITE, 1_000_000.0),
                (FFMA, 1000.0),
                (FADD, 500.0),
            ],
        ),
        k(FLASH, 3, 300_000, 400_000),
        counters(
            3,
            &[
                (READ, 200_000_000.0),
                (WRITE, 0.0),
                (TENSOR_BF16, 49_470_000_000.0),
            ],
        ),
        // Decode.
        gemm(4, 2, 0, 4096, 1, 4096),
        gemm(5, 2, 1, 4096, 1, 4096),
        k(GEMM_KERNEL, 4, 1_000_000, 1_010_000),
        counters(4, &[(READ, 33_554_432.0), (WRITE, 8192.0)]),
        k(SPLIT_K, 5, 1_010_000, 1_012_000),
        k(RMS_NORM, 6, 1_100_000, 1_110_000),
        k(WORKER, 7, 1_200_000, 1_201_000),
    ];
    let mut out: Vec<(u32, Record)> = r.drain(..).map(|x| (1, x)).collect();
    out.extend([
        (2, process(2, "./other")),
        (
            2,
            Record::Device(device("Mystery GPU", (7, 5), 40, 1_590_000)),
        ),
        (2, string(1, "worker_kernel")),
        (2, k(1, 1, 0, 1000)),
    ]);
    out
}

fn row<'a>(e: &'a Efficiency, name: &str, gpu: &str) -> &'a KernelRow {
    e.kernels
        .iter()
        .find(|r| r.name == name && r.gpu == gpu)
        .unwrap_or_else(|| panic!("no row {name} on {gpu}"))
}

fn pct1(x: Option<f64>) -> f64 {
    (x.unwrap() * 1000.0).round() / 10.0
}

#[test]
fn kernel_rows() {
    let e = efficiency(&session(), &Overrides::default());
    let names: Vec<(&str, &str)> = e
        .kernels
        .iter()
        .map(|r| (r.name.as_str(), r.gpu.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", H100),
            ("flash_fwd_kernel", H100),
            ("rms_norm_kernel", H100),
            ("splitKreduce_kernel", H100),
            ("worker_kernel", "Mystery GPU"),
            ("worker_kernel", H100),
        ]
    );

    // GEMM: model FLOPs of both calls, bytes of both launches.
    let g = row(&e, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", H100);
    let flops = 137_438_953_472.0 + 33_554_432.0;
    assert_eq!(
        (g.calls, g.gpu_ns, g.gemm_launches, g.gemm_part_launches),
        (2, 170_000, 2, 0)
    );
    assert_eq!(g.model_flops, Some(flops));
    assert_eq!(
        (g.hw_flops, g.flops_source),
        (None, Some(FlopSource::Model))
    );
    assert_eq!(g.math, Some(Math::tensor(Precision::Bf16)));
    assert_eq!(g.family, Family::Gemm);
    assert_eq!((g.bytes, g.bytes_launches), (Some(134_225_920.0), 2));
    assert_eq!(
        (g.peak_flops, g.bandwidth),
        (Some(H100_BF16), Some(H100_BW))
    );
    assert_eq!(g.point.achieved, Some(flops * 1e9 / 170_000.0));
    assert_eq!(pct1(g.point.mfu), 81.7);
    assert_eq!(g.point.intensity, Some(flops / 134_225_920.0));
    assert_eq!(g.point.bound, Some(Bound::Compute));

    // Split-K reduction: part of the decode GEMM call, no FLOPs of its own.
    let s = row(&e, "splitKreduce_kernel", H100);
    assert_eq!((s.gemm_launches, s.gemm_part_launches), (1, 1));
    assert_eq!(
        (s.model_flops, s.flops_source),
        (Some(0.0), Some(FlopSource::Model))
    );
    assert_eq!(s.family, Family::Gemm);
    assert_eq!(s.bytes, None);
    assert_eq!(s.point.mfu, Some(0.0));

    // RMS norm: hardware FLOPs 2 x 1000 FFMA + 500 FADD per launch, 2 launches; bytes
    // measured on one launch, scaled to two.
    let n = row(&e, "rms_norm_kernel", H100);
    assert_eq!((n.model_flops, n.hw_flops), (None, Some(5000.0)));
    assert_eq!(n.hw_flops_launches, 1);
    assert_eq!(n.flops_source, Some(FlopSource::Hardware));
    assert_eq!(n.math, Some(Math::cuda(Precision::Fp32)));
    assert_eq!(n.peak_flops, Some(H100_FP32));
    assert_eq!((n.bytes, n.bytes_launches), (Some(4_000_000.0), 1));
    assert_eq!(n.family, Family::Reduction);
    assert_eq!(n.point.achieved, Some(250_000_000.0));
    assert_eq!(n.point.intensity, Some(0.00125));
    assert_eq!(n.point.bound, Some(Bound::Memory));
    assert_eq!(n.point.mbu, Some(4e6 * 1e9 / 20_000.0 / H100_BW));

    // Flash attention: 49.47 GFLOP in 100 µs = 494.7 TFLOP/s = 50 % MFU; 200 MB in
    // 100 µs = 2 TB/s = 59.7 % MBU; AI 247.35 below the ridge (295.3): memory bound.
    let f = row(&e, "flash_fwd_kernel", H100);
    assert_eq!(f.family, Family::Attention);
    assert_eq!(f.math, Some(Math::tensor(Precision::Bf16)));
    assert_eq!(f.point.achieved, Some(494.7e12));
    assert_eq!(f.point.mfu, Some(0.5));
    assert_eq!(f.point.intensity, Some(247.35));
    assert_eq!(pct1(f.point.mbu), 59.7);
    assert_eq!(f.point.bound, Some(Bound::Memory));
    assert_eq!(f.point.attainable, Some(247.35 * H100_BW));
    assert_eq!(pct1(f.point.efficiency), 59.7);

    // Nothing known.
    let w = row(&e, "worker_kernel", H100);
    assert_eq!((w.flops_source, w.bytes, w.point.mfu), (None, None, None));
    assert_eq!(w.family, Family::Other);
    let m = row(&e, "worker_kernel", "Mystery GPU");
    assert_eq!((m.peak_flops, m.bandwidth), (None, None));
}

#[test]
fn missing_values_say_what_for_which_kernel() {
    let e = efficiency(&session(), &Overrides::default());
    let missing: Vec<(&str, &str, &str)> = e
        .missing
        .iter()
        .map(|m| (m.kernel.as_str(), m.gpu.as_str(), m.what.as_str()))
        .collect();
    // Each says what would give the value: pid 1 measured kernels (so another run can
    // measure these), pid 2 had no counters at all.
    let unmeasured = "no DRAM counters: its launch was not measured (one launch at a time \
                      per context is, within GPUPROF_COUNTER_BUDGET; a longer run, \
                      GPUPROF_COUNTER_LAUNCHES=0, or GPUPROF_COUNTERS=sampling)";
    let off = ": hardware counters were off (the Counters section says why)";
    assert_eq!(
        missing,
        vec![
            ("splitKreduce_kernel", H100, unmeasured),
            (
                "worker_kernel",
                "Mystery GPU",
                format!("no GEMM shape and no FLOP counters{off}").as_str()
            ),
            (
                "worker_kernel",
                "Mystery GPU",
                format!("no DRAM counters{off}").as_str()
            ),
            ("worker_kernel", "Mystery GPU", "no peaks for Mystery GPU"),
            (
                "worker_kernel",
                H100,
                "no GEMM shape and no FLOP counters: not a cuBLAS GEMM, and no launch \
                 measured its FLOP counters (GPUPROF_REPLAY=kernel measures every group on \
                 each measured launch)"
            ),
            ("worker_kernel", H100, unmeasured),
            (
                "GEMM 4096x1x4096 x1 bf16·bf16->bf16 (fp32)",
                H100,
                "no DRAM counters for this GEMM shape"
            ),
        ]
    );
    assert_eq!(e.gpus.len(), 2);
    assert_eq!(e.gpus[0].gpu, H100);
    assert_eq!(e.gpus[0].devices, vec![(1, 0)]);
    assert!(e.gpus[0].peaks.is_some());
    assert!(e.gpus[1]
        .error
        .as_deref()
        .unwrap()
        .starts_with("no peaks for GPU \"Mystery GPU\" (device 0)"));
}

#[test]
fn shape_rollups() {
    let e = efficiency(&session(), &Overrides::default());
    let labels: Vec<&str> = e.shapes.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "4096x4096x4096 x1 bf16·bf16->bf16 (fp32)",
            "4096x1x4096 x1 bf16·bf16->bf16 (fp32)",
        ]
    );
    let big = &e.shapes[0];
    assert_eq!((big.calls, big.launches, big.gpu_ns), (1, 1, 160_000));
    assert_eq!(big.model_flops, 137_438_953_472.0);
    assert_eq!(big.point.achieved, Some(858_993_459_200_000.0));
    assert_eq!(pct1(big.point.mfu), 86.8);
    // The decode GEMM: one call, two launches (12 µs). DRAM bytes were measured on the
    // main kernel only; the reduction (another kernel name) has none, so neither has
    // the shape.
    let small = &e.shapes[1];
    assert_eq!((small.calls, small.launches, small.gpu_ns), (1, 2, 12_000));
    assert_eq!(small.model_flops, 33_554_432.0);
    assert_eq!((small.bytes, small.bytes_launches), (None, 1));
    assert_eq!(
        small.kernels,
        vec![
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n".to_string(),
            "splitKreduce_kernel".to_string()
        ]
    );
    assert_eq!(small.point.achieved, Some(33_554_432.0 * 1e9 / 12_000.0));
}

#[test]
fn family_range_and_run_rollups() {
    let e = efficiency(&session(), &Overrides::default());
    let names: Vec<&str> = e.families.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, vec!["GEMM", "attention", "reduction", "other"]);
    let gemm_flops = 137_438_953_472.0 + 33_554_432.0;
    let g = &e.families[0];
    assert_eq!((g.launches, g.gpu_ns), (3, 172_000));
    assert_eq!(
        (g.model.flops, g.model.flops_ns),
        (Some(gemm_flops), 172_000)
    );
    // No launch of the GEMMs measured FLOP counters: no hardware FLOPs, not 0.
    assert_eq!((g.hw.flops, g.hw.flops_ns, g.hw.mfu), (None, 0, None));
    assert_eq!(g.model.mfu, Some(gemm_flops / H100_BF16 * 1e9 / 172_000.0));
    // Bytes: the main kernel's two launches; the reduction has none, so MBU is over
    // the main kernel's time, which is what it covers (not 0 % for the reduction).
    assert_eq!((g.bytes, g.bytes_ns), (134_225_920.0, 170_000));
    assert_eq!((g.model.mfu_ns, g.mbu_ns), (172_000, 170_000));
    assert_eq!(g.mbu, Some(134_225_920.0 / H100_BW * 1e9 / 170_000.0));
    assert_eq!(g.mbu_coverage(), Some(170_000.0 / 172_000.0));
    assert_eq!(g.model.intensity, Some(gemm_flops / 134_225_920.0));

    let other = &e.families[3];
    assert_eq!((other.launches, other.gpu_ns), (2, 2000));
    for f in [&other.model, &other.hw] {
        assert_eq!(
            (f.flops, f.flops_ns, f.mfu, f.achieved),
            (None, 0, None, None)
        );
    }
    assert_eq!((other.mbu, other.mbu_ns), (None, 0));

    // Prefill: the big GEMM (model FLOPs), RMS norm and flash (hardware FLOPs), each
    // kind over its own launches' time, never one sum.
    let names: Vec<&str> = e.ranges.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["prefill", "decode"]);
    let p = &e.ranges[0];
    assert_eq!((p.launches, p.gpu_ns), (3, 270_000));
    assert_eq!(p.model.flops, Some(137_438_953_472.0));
    assert_eq!((p.model.flops_ns, p.model.mfu_ns), (160_000, 160_000));
    assert_eq!(
        p.model.mfu,
        Some(137_438_953_472.0 / H100_BF16 * 1e9 / 160_000.0)
    );
    assert_eq!(pct1(p.model.mfu), 86.8);
    assert_eq!(p.hw.flops, Some(2500.0 + 49_470_000_000.0));
    assert_eq!((p.hw.flops_ns, p.hw.mfu_ns), (110_000, 110_000));
    let hw_at_peak = 2500.0 / H100_FP32 + 49_470_000_000.0 / H100_BF16;
    assert_eq!(p.hw.mfu, Some(hw_at_peak * 1e9 / 110_000.0));
    assert_eq!(pct1(p.hw.mfu), 45.5);
    assert_eq!(
        p.hw.intensity,
        Some((2500.0 + 49_470_000_000.0) / 202_000_000.0)
    );
    let bytes = 100_663_296.0 + 2_000_000.0 + 200_000_000.0;
    assert_eq!(p.bytes, bytes);
    let at_bw = 100_663_296.0 / H100_BW + 2_000_000.0 / H100_BW + 200_000_000.0 / H100_BW;
    assert_eq!(p.mbu, Some(at_bw * 1e9 / 270_000.0));
    assert_eq!(pct1(p.mbu), 33.5);

    // Decode: GEMM main + reduction, RMS norm (bytes from the prefill launch's mean),
    // the worker (nothing known). Its counters were removed, as were the reduction's:
    // MFU and MBU are over the time they cover, not over all of it with the unknown
    // counted as 0 (which gave 0.1 % and 46.2 %), and say how much that is.
    let d = &e.ranges[1];
    assert_eq!((d.launches, d.gpu_ns), (4, 23_000));
    assert_eq!((d.model.flops_ns, d.hw.flops_ns), (12_000, 10_000));
    assert_eq!(
        (d.model.mfu_ns, d.mbu_ns, d.bytes_ns),
        (12_000, 20_000, 20_000)
    );
    assert_eq!(d.model.flops, Some(33_554_432.0));
    assert_eq!(d.hw.flops, Some(2500.0));
    assert_eq!(d.model.mfu, Some(33_554_432.0 / H100_BF16 * 1e9 / 12_000.0));
    assert_eq!(d.hw.mfu, Some(2500.0 / H100_FP32 * 1e9 / 10_000.0));
    assert_eq!(d.bytes, 33_562_624.0 + 2_000_000.0);
    assert_eq!(
        d.mbu,
        Some((33_562_624.0 / H100_BW + 2_000_000.0 / H100_BW) * 1e9 / 20_000.0)
    );
    assert_eq!(pct1(d.mbu), 53.1);
    assert_eq!(d.mbu_coverage(), Some(20_000.0 / 23_000.0));

    // The run: every launch of both processes; pid 2's GPU has no peaks. Model FLOPs
    // cover the GEMMs' 172 µs, hardware FLOPs the RMS norms' and flash's 120 µs.
    let r = &e.run;
    assert_eq!((r.launches, r.gpu_ns), (8, 294_000));
    assert_eq!(r.model.flops, Some(gemm_flops));
    assert_eq!(r.hw.flops, Some(5000.0 + 49_470_000_000.0));
    assert_eq!((r.model.mfu_ns, r.hw.mfu_ns), (172_000, 120_000));
    assert_eq!(r.model.mfu, Some(gemm_flops / H100_BF16 * 1e9 / 172_000.0));
    assert_eq!(
        r.hw.mfu,
        Some((5000.0 / H100_FP32 + 49_470_000_000.0 / H100_BF16) * 1e9 / 120_000.0)
    );
    assert_eq!(r.model.mfu_coverage(r.gpu_ns), Some(172_000.0 / 294_000.0));
    assert!(e.any());
}

#[test]
fn peaks_file_changes_the_ceilings() {
    let o = super::super::peaks::parse_overrides(
        "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf16 = 494.7\n[[gpu]]\nname = \"Mystery GPU\"\ndram_tb_s = 1\n",
        "p.toml",
    )
    .unwrap();
    let e = efficiency(&session(), &o);
    assert_eq!(row(&e, "flash_fwd_kernel", H100).point.mfu, Some(1.0));
    let m = row(&e, "worker_kernel", "Mystery GPU");
    assert_eq!(m.bandwidth, Some(1e12));
    assert!(!e.missing.iter().any(|x| x.what.starts_with("no peaks for")));
}

#[test]
fn a_utilization_over_the_peak_is_marked_and_explained() {
    // A BF16 peak of 400 TFLOP/s: flash_fwd_kernel's 494.7 TFLOP/s is 123.7% of it.
    let o = super::super::peaks::parse_overrides(
        "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf16 = 400\n",
        "p.toml",
    )
    .unwrap();
    let records = session();
    let s = crate::analysis::summarize(&records);
    let over = crate::output::report::table_with(&s, Some(&efficiency(&records, &o)), None);
    let flash = over
        .lines()
        .find(|l| l.contains("BF16 tensor") && l.ends_with("  flash_fwd_kernel"))
        .unwrap();
    assert!(flash.contains("  494.70T  123.7!   59.7  "), "{flash}");
    assert!(
        over.contains("\n  (!: over 100% of the peak: the peak is too low for these kernels"),
        "{over}"
    );
    // Under the peaks, neither the mark nor its legend.
    let e = efficiency(&records, &Overrides::default());
    let under = crate::output::report::table_with(&s, Some(&e), None);
    assert!(!under.contains('!'), "{under}");
}

#[test]
fn graph_replays_count_each_call() {
    use wire::testing::{cloned, graph_kernel, graph_node};
    let records: Vec<(u32, Record)> = vec![
        (1, Record::Device(device(H100, (9, 0), 132, 1_980_000))),
        (1, string(1, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n")),
        (1, gemm(10, 1, 0, 1024, 1024, 1024)),
        (1, graph_node(100, 10)),
        (1, cloned(200, 100)),
        (1, graph_kernel(1, 50, 200, 0, 1000)),
        (1, graph_kernel(1, 51, 200, 2000, 3000)),
    ];
    let e = efficiency(&records, &Overrides::default());
    let g = &e.kernels[0];
    assert_eq!(g.model_flops, Some(2.0 * 2.0 * 1024.0 * 1024.0 * 1024.0));
    assert_eq!(g.point.achieved, Some(2_147_483_648.0 * 1e9 / 1000.0));
    assert_eq!(e.shapes[0].calls, 2);
    // Without DRAM counters: no MBU, no bound.
    assert_eq!((g.point.mbu, g.point.bound), (None, None));
    assert!(e.any());
}

#[test]
fn hardware_flops_need_every_planned_counter_of_each_launch_configuration() {
    let mut records = session();
    records.push((
        1,
        Record::CounterPlan(Box::new(wire::CounterPlan {
            device_id: 0,
            chip: "GH100".into(),
            mode: "kernel".into(),
            groups: vec![vec![READ, WRITE, TENSOR_BF16], vec![FFMA, FADD, 30]],
            policy: "every launch".into(),
        })),
    ));
    records.push((
        1,
        string(30, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"),
    ));
    let e = efficiency(&records, &Overrides::default());
    let about = |kernel: &str| -> Vec<&str> {
        e.missing
            .iter()
            .filter(|m| m.kernel == kernel && m.gpu == H100)
            .map(|m| m.what.as_str())
            .collect()
    };
    assert_eq!(
        about("flash_fwd_kernel"),
        vec![
            "no hw FLOPs: FLOP counters never measured on 1 of its 1 launch configuration \
             (grid 1x1x1, block 128x1x1: smsp__sass_thread_inst_executed_op_dfma_pred_on.sum, \
             smsp__sass_thread_inst_executed_op_fadd_pred_on.sum, \
             smsp__sass_thread_inst_executed_op_ffma_pred_on.sum); the pass groups rotate over a kernel's launches: a longer run, or \
             GPUPROF_REPLAY=kernel (every group on each measured launch), gives them"
        ]
    );
    assert_eq!(
        about("rms_norm_kernel"),
        vec![
            "no hw FLOPs: FLOP counters never measured on 1 of its 1 launch configuration \
             (grid 1x1x1, block 128x1x1: sm__ops_path_tensor_src_bf16_dst_fp32.sum, \
             smsp__sass_thread_inst_executed_op_dfma_pred_on.sum); the pass groups rotate over a kernel's launches: a longer run, or \
             GPUPROF_REPLAY=kernel (every group on each measured launch), gives them"
        ]
    );
    // Model FLOPs need no counters.
    assert_eq!(
        about("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
        Vec::<&str>::new()
    );
}

#[test]
fn dram_counters_alone_have_nothing_to_show() {
    let records = vec![
        (1, Record::Device(device(H100, (9, 0), 132, 1_980_000))),
        (1, string(1, "kernel")),
        (1, string(READ, "dram__bytes_read.sum")),
        (1, k(1, 1, 0, 10)),
        (1, counters(1, &[(READ, 100.0)])),
    ];
    let e = efficiency(&records, &Overrides::default());
    assert!(!e.any());
    assert_eq!(e.kernels[0].bytes, Some(100.0));
    assert_eq!(e.kernels[0].point.mbu, Some(100.0 * 1e9 / 10.0 / H100_BW));
}

#[test]
fn a_session_with_timing_only_has_nothing_to_show() {
    let records = vec![
        (1, Record::Device(device(H100, (9, 0), 132, 1_980_000))),
        (1, string(1, "kernel")),
        (1, k(1, 1, 0, 10)),
    ];
    let e = efficiency(&records, &Overrides::default());
    assert!(!e.any());
    assert_eq!(e.run.gpu_ns, 10);
}

#[test]
fn flop_metrics() {
    assert_eq!(
        flop_metric("sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
        Some((1.0, Some(Math::tensor(Precision::Bf16))))
    );
    assert_eq!(
        flop_metric("sm__ops_path_tensor_op_hgmma_src_fp16.sum"),
        Some((1.0, Some(Math::tensor(Precision::Fp16))))
    );
    assert_eq!(
        flop_metric("sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp16.sum"),
        Some((1.0, Some(Math::tensor(Precision::Fp8))))
    );
    assert_eq!(
        flop_metric("sm__ops_path_tensor_src_fp4_dst_fp32.sum"),
        Some((1.0, Some(Math::tensor(Precision::Fp4))))
    );
    assert_eq!(
        flop_metric("sm__ops_path_tensor_src_tf32_dst_fp32.sum"),
        Some((1.0, Some(Math::tensor(Precision::Tf32))))
    );
    assert_eq!(
        flop_metric("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"),
        Some((2.0, Some(Math::cuda(Precision::Fp64))))
    );
    assert_eq!(
        flop_metric("smsp__sass_thread_inst_executed_op_ffma2_pred_on.sum"),
        Some((4.0, Some(Math::cuda(Precision::Fp32))))
    );
    assert_eq!(
        flop_metric("sm__ops_path_tensor_src_bf16_dst_fp32.avg"),
        None
    );
    assert_eq!(flop_metric("dram__bytes_read.sum"), None);
    assert_eq!(
        flop_metric("smsp__sass_thread_inst_executed_op_integer_pred_on.sum"),
        None
    );
}

/// The table's roofline sections, between the counters and the copies.
const TABLE: &str = "
Roofline by kernel (FLOPs: GEMM shapes; hw: counters, * where AI, FLOP/s and MFU use them; AI in FLOP/byte)
   GPU µs    FLOPs  hw FLOPs  DRAM bytes       AI   FLOP/s  MFU %  MBU %  bound    math             gpu                    name
  170.000  137.47G         -     134.23M  1024.19  808.66T   81.7   23.6  compute  BF16 tensor      NVIDIA H100 80GB HBM3  sm90_xmma_…_tn_n
  100.000        -   49.47G*     200.00M   247.35  494.70T   50.0   59.7  memory   BF16 tensor      NVIDIA H100 80GB HBM3  flash_fwd_kernel
   20.000        -    5.00k*       4.00M   0.0013  250.00M    0.0    6.0  memory   FP32 CUDA cores  NVIDIA H100 80GB HBM3  rms_norm_kernel
    2.000        0         -           -        -        0    0.0      -  -        BF16 tensor      NVIDIA H100 80GB HBM3  splitKredu…ernel
    1.000        -         -           -        -        -      -      -  -        -                Mystery GPU            worker_kernel
    1.000        -         -           -        -        -      -      -  -        -                NVIDIA H100 80GB HBM3  worker_kernel

Roofline by GEMM shape (tokens x out x in x batch: cuBLAS's N x M x K as PyTorch calls it; types; op(A) op(B))
  calls   GPU µs  model FLOPs       AI   FLOP/s  MFU %  MBU %  bound    shape
      1  160.000      137.44G  1365.33  858.99T   86.8   18.8  compute  4096x4096x4096 x1 bf16·bf16->bf16 (fp32) TN [NVIDIA H100 80GB HBM3]
         └ compute-bound at 86.8% of the BF16 tensor peak
      1   12.000       33.55M        -    2.80T    0.3      -  -        1x4096x4096 x1 bf16·bf16->bf16 (fp32) TN [NVIDIA H100 80GB HBM3]

Roofline by kernel family
  MFU: model FLOPs (GEMM shapes), HFU: hardware FLOPs (counters), MBU: DRAM bytes, each at peak over the GPU time of the
    launches that have them ((N%): their share of the GPU time); wall: over the GPUs' wall time, idle included; AI in
    FLOP/byte
  launches   GPU µs  time %  model FLOPs  MFU %  hw FLOPs  HFU %     DRAM bytes       MBU %  model AI   hw AI  family
         3  172.000   58.50      137.47G   80.8         -      -  134.23M (98%)  23.6 (98%)   1024.19       -  GEMM
         1  100.000   34.01            -      -    49.47G   50.0        200.00M        59.7         -  247.35  attention
         2   20.000    6.80            -      -     5.00k    0.0          4.00M         6.0         -  0.0013  reduction
         2    2.000    0.68            -      -         -      -              -           -         -       -  other

Roofline by NVTX range
  launches   GPU µs  model FLOPs  MFU busy %  MFU wall %  hw FLOPs       HFU %    DRAM bytes       MBU %  range
         3  270.000      137.44G  86.8 (59%)  13.9 (59%)    49.47G  45.5 (40%)       302.66M        33.5  prefill
         4   23.000       33.55M   0.3 (52%)  <0.1 (52%)     2.50k   0.0 (43%)  35.56M (86%)  53.1 (86%)  decode
  (time %, hw AI, model AI left out to fit 120 columns: --format csv or json has them)

Roofline of the run
  launches   GPU µs  model FLOPs  MFU busy %  MFU wall %  hw FLOPs       HFU %     DRAM bytes       MBU %  model AI
         8  294.000      137.47G  80.8 (58%)  11.6 (58%)    49.47G  41.7 (40%)  338.23M (98%)  34.8 (98%)   1024.19  run
  (time %, hw AI left out to fit 120 columns: --format csv or json has them)

Peaks (dense)
  NVIDIA H100 80GB HBM3 (pid 1 device 0)
    TFLOP/s: FP64 tensor 67, TF32 tensor 494.7, FP16 tensor 989.4, BF16 tensor 989.4, FP8 tensor 1978.8, INT8 tensor
      1978.8, FP32 CUDA cores 67, FP64 CUDA cores 34
    DRAM: 3.35 TB/s
    ridge points, FLOP/byte: FP64 tensor 20.00, TF32 tensor 147.67, FP16 tensor 295.34, BF16 tensor 295.34, FP8 tensor
      590.69, INT8 tensor 590.69, FP32 CUDA cores 20.00, FP64 CUDA cores 10.15
    source: NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 dense 989.4 TFLOP/s, FP8 1978.8, TF32 494.7, FP64 tensor
      67, FP32 67, FP64 34 TFLOP/s, 3.35 TB/s
  Mystery GPU (pid 2 device 0)
    no peaks for GPU \"Mystery GPU\" (device 0): not in the table of known GPUs, and cannot derive them without the per-SM
      rates of architecture sm_75 (known: sm_80, sm_86, sm_89, sm_90, sm_100); give them in a peaks file (--peaks)

Roofline values missing
  splitKreduce_kernel [NVIDIA H100 80GB HBM3]: no DRAM counters: its launch was not measured (one launch at a time per
    context is, within GPUPROF_COUNTER_BUDGET; a longer run, GPUPROF_COUNTER_LAUNCHES=0, or GPUPROF_COUNTERS=sampling)
  worker_kernel [Mystery GPU]: no GEMM shape and no FLOP counters: hardware counters were off (the Counters section says
    why)
  worker_kernel [Mystery GPU]: no DRAM counters: hardware counters were off (the Counters section says why)
  worker_kernel [Mystery GPU]: no peaks for Mystery GPU
  worker_kernel [NVIDIA H100 80GB HBM3]: no GEMM shape and no FLOP counters: not a cuBLAS GEMM, and no launch measured
    its FLOP counters (GPUPROF_REPLAY=kernel measures every group on each measured launch)
  worker_kernel [NVIDIA H100 80GB HBM3]: no DRAM counters: its launch was not measured (one launch at a time per context
    is, within GPUPROF_COUNTER_BUDGET; a longer run, GPUPROF_COUNTER_LAUNCHES=0, or GPUPROF_COUNTERS=sampling)
  GEMM 4096x1x4096 x1 bf16·bf16->bf16 (fp32) [NVIDIA H100 80GB HBM3]: no DRAM counters for this GEMM shape
";

#[test]
fn report_sections() {
    let records = session();
    let e = efficiency(&records, &Overrides::default());
    let s = crate::analysis::summarize(&records);
    let table = crate::output::report::table_with(&s, Some(&e), None);
    let from = table.find("\nRoofline by kernel").unwrap();
    let to = table.find("\nLaunch shape by kernel config").unwrap();
    assert_eq!(&table[from..to], TABLE);
    // Without the roofline, the rest is the report as before.
    assert_eq!(
        table.replacen(TABLE, "", 1),
        crate::output::report::table(&s, None)
    );

    // `--top 1`: one GEMM shape and one missing value, the others counted.
    let top1 = crate::output::report::table_with(&s, Some(&e), Some(1));
    let more: Vec<&str> = top1.lines().filter(|l| l.starts_with("  ... ")).collect();
    assert_eq!(
        more,
        [
            "  ... 4 more kernels (--top 0 shows all)",
            "  ... 5 more kernels (--top 0 shows all)",
            // The second shape: one call of 12 µs of the run's 294 µs.
            "  ... 1 more GEMM shapes, 1 calls, 4.08% of GPU time (--top 0 shows all)",
            "  ... 6 more (--top 0 shows all; JSON: roofline.missing)",
            "  ... 5 more configs (--top 0 shows all; JSON and CSV list every finding)",
        ]
    );
    assert_eq!(
        (e.shapes[1].calls, e.shapes[1].gpu_ns, s.kernel_ns),
        (1, 12_000, 294_000)
    );
    let v = crate::output::report::json_with(&s, Some(&e), None);
    // Written member by member, the report is the object's bytes.
    let mut written = Vec::new();
    let members = crate::output::report::json_members(&s, Some(&e), None);
    crate::output::report::write_members(members, &mut written).unwrap();
    assert_eq!(
        String::from_utf8(written).unwrap(),
        serde_json::to_string_pretty(&v).unwrap()
    );
    let r = &v["roofline"];
    assert_eq!(r["kernels"].as_array().unwrap().len(), 6);
    assert_eq!(r["kernels"][0]["mfu_pct"], 81.73);
    assert_eq!(r["kernels"][0]["flops_source"], "model");
    assert_eq!(r["kernels"][1]["precision"], "BF16");
    assert_eq!(r["kernels"][1]["pipe"], "tensor");
    assert_eq!(r["shapes"][0]["mfu_pct"], 86.82);
    assert_eq!(r["shapes"][0]["m"], 4096);
    assert_eq!(r["shapes"][0]["a_type"], "bf16");
    assert_eq!(r["ranges"][0]["name"], "prefill");
    assert_eq!(r["ranges"][0]["mfu_pct"], 86.82);
    assert_eq!(r["ranges"][0]["hfu_pct"], 45.45);
    assert_eq!(r["ranges"][0]["mfu_coverage_pct"], 59.26);
    assert_eq!(r["run"]["gpu_ns"], 294_000);
    assert_eq!(r["peaks"][0]["bf16_tensor_flops_per_s"], 989.4e12);
    assert_eq!(
        r["peaks"][1]["bf16_tensor_flops_per_s"],
        serde_json::Value::Null
    );
    assert_eq!(r["missing"].as_array().unwrap().len(), 7);
    let mut plain = v.clone();
    plain.as_object_mut().unwrap().remove("roofline");
    assert_eq!(plain, crate::output::report::json(&s, None));

    let csv = crate::output::report::csv_with(&s, Some(&e), None);
    let plain = crate::output::report::csv(&s, None);
    assert!(csv.starts_with(&plain));
    let sections: Vec<&str> = csv[plain.len()..]
        .lines()
        .filter(|l| l.starts_with("# "))
        .collect();
    assert_eq!(
        sections,
        vec![
            "# roofline_kernels",
            "# roofline_shapes",
            "# roofline_families",
            "# roofline_ranges",
            "# roofline_run",
            "# peaks",
            "# roofline_missing"
        ]
    );
    // name, launches, GPU time; model FLOPs, their GPU time and AI (the GEMMs'
    // bytes: 134225920); then the hardware FLOPs' own.
    let ai = 137_472_507_904.0_f64 / 134_225_920.0;
    assert!(
        csv.contains(&format!("\nrun,8,294000,137472507904.0,172000,{ai:?},")),
        "{csv}"
    );
    assert!(csv.contains(",49470005000.0,120000,"), "{csv}");
}

/// Counters measured on some launch configurations of a kernel are scaled to the
/// launches of those configurations only: another grid does other work.
#[test]
fn counters_scale_within_a_launch_configuration_only() {
    let with_grid = |corr: u32, start: u64, grid: i32| {
        let Record::Kernel(mut x) = k(RMS_NORM, corr, start, start + 10_000) else {
            unreachable!()
        };
        x.grid = [grid, 1, 1];
        Record::Kernel(x)
    };
    let plan = Record::CounterPlan(Box::new(wire::CounterPlan {
        device_id: 0,
        chip: "GH100".into(),
        mode: "kernel".into(),
        groups: vec![vec![READ, WRITE, FFMA, FADD]],
        policy: "every launch".into(),
    }));
    let base: Vec<Record> = vec![
        process(1, "./llm"),
        Record::Device(device(H100, (9, 0), 132, 1_980_000)),
        string(RMS_NORM, "rms_norm_kernel"),
        string(READ, "dram__bytes_read.sum"),
        string(WRITE, "dram__bytes_write.sum"),
        string(FFMA, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
        string(FADD, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"),
        plan,
        // Grid 128: two launches, one measured.
        with_grid(1, 0, 128),
        counters(
            1,
            &[(READ, 1000.0), (WRITE, 500.0), (FFMA, 100.0), (FADD, 50.0)],
        ),
        with_grid(2, 100_000, 128),
        // Grid 1: one launch, measured.
        with_grid(3, 200_000, 1),
        counters(3, &[(READ, 10.0), (WRITE, 5.0), (FFMA, 1.0), (FADD, 0.0)]),
    ];
    let records: Vec<(u32, Record)> = base.iter().cloned().map(|r| (1, r)).collect();
    let e = efficiency(&records, &Overrides::default());
    let r = row(&e, "rms_norm_kernel", H100);
    // Per configuration: 2 x (1000 + 500) + 1 x (10 + 5) bytes; 2 x (2 x 100 + 50) +
    // 1 x (2 x 1 + 0) FLOPs.
    assert_eq!(r.bytes, Some(3015.0));
    assert_eq!(r.hw_flops, Some(502.0));
    assert_eq!(r.bytes_launches, 2);

    // Without the grid-1 launch's counters, nothing stands in for them.
    let mut records = records;
    records.retain(|(_, r)| !matches!(r, Record::KernelCounters(c) if c.correlation_id == 3));
    let e = efficiency(&records, &Overrides::default());
    let r = row(&e, "rms_norm_kernel", H100);
    assert_eq!((r.bytes, r.hw_flops), (None, None));
    let about: Vec<&str> = e
        .missing
        .iter()
        .filter(|m| m.kernel == "rms_norm_kernel")
        .map(|m| m.what.as_str())
        .collect();
    assert_eq!(
        about,
        [
            "no hw FLOPs: FLOP counters never measured on 1 of its 2 launch configurations \
             (grid 1x1x1, block 128x1x1: smsp__sass_thread_inst_executed_op_fadd_pred_on.sum, \
             smsp__sass_thread_inst_executed_op_ffma_pred_on.sum); the pass groups rotate over a kernel's launches: a longer run, or \
             GPUPROF_REPLAY=kernel (every group on each measured launch), gives them",
            "DRAM bytes for only 2 of 3 launches (no launch of the same launch configuration \
             and GEMM shape measured them; a longer run, or GPUPROF_COUNTER_LAUNCHES=0, \
             measures each)"
        ]
    );
}

/// A decode loop under PM sampling: a GEMV (a GEMM shape) of 10 µs and an RMS norm of
/// 2 µs, repeated with a gap, sampled every 7 µs with exact values. Neither has
/// per-kernel counters; their DRAM bytes come from the fitted rates, marked sampled on
/// the rows, the shape and the run.
#[test]
fn bytes_fitted_to_sampling_windows_are_marked_sampled() {
    use wire::testing::sample;
    let (gemv, norm) = (1, 2);
    let mut r: Vec<Record> = vec![
        process(1, "./serve"),
        Record::Device(device(H100, (9, 0), 132, 1_980_000)),
        string(gemv, "gemv2T_kernel"),
        string(norm, "rms_norm_kernel"),
        string(READ, "dram__bytes_read.sum"),
        string(WRITE, "dram__bytes_write.sum"),
    ];
    // (class, start, end): per step a GEMV then a norm, 3 µs plus a little idle after.
    let mut spans = Vec::new();
    let mut t = 1_000u64;
    for step in 0..60u32 {
        let corr = 2 * step + 1;
        r.push(gemm(corr, u64::from(step) + 1, 0, 4096, 1, 4096));
        r.push(k(gemv, corr, t, t + 10_000));
        r.push(k(norm, corr + 1, t + 10_000, t + 12_000));
        spans.push((0, t, t + 10_000));
        spans.push((1, t + 10_000, t + 12_000));
        t += 15_000 + u64::from(step % 7) * 11;
    }
    // Bytes per ns of kernel time: (read, write) of the GEMV and of the norm.
    let rates = [(3000.0, 1.0), (8.0, 4.0)];
    let mut a = 0;
    while a < t {
        let b = a + 7_000;
        let (mut read, mut write) = (0.0, 0.0);
        for &(c, s, e) in &spans {
            let o = e.min(b).saturating_sub(s.max(a)) as f64;
            read += rates[c].0 * o;
            write += rates[c].1 * o;
        }
        r.push(sample(a, b, &[(READ, read), (WRITE, write)]));
        a = b;
    }
    let e = efficiency(&wire::testing::on(1, r), &Overrides::default());
    let row = |name: &str| e.kernels.iter().find(|k| k.name == name).expect(name);
    for (name, (read, write), ns) in [
        ("gemv2T_kernel", rates[0], 10_000.0),
        ("rms_norm_kernel", rates[1], 2_000.0),
    ] {
        let k = row(name);
        let want = (read + write) * ns * 60.0;
        let got = k.bytes.expect("fitted bytes");
        assert!((got - want).abs() <= 1e-9 * want, "{name}: {got} vs {want}");
        assert_eq!(k.bytes_source, Some(BytesSource::Sampled), "{name}");
        assert_eq!(k.bytes_launches, 0, "{name}: none measured");
    }
    assert_eq!(e.shapes[0].bytes_source, Some(BytesSource::Sampled));
    assert!(e.shapes[0].point.mbu.is_some());
    assert_eq!(e.run.bytes_source, Some(BytesSource::Sampled));
    assert!(
        !e.missing.iter().any(|m| m.what.contains("DRAM")),
        "{:?}",
        e.missing
    );
    let table = crate::output::report::table_with(
        &crate::analysis::summary::summarize(&[]),
        Some(&e),
        None,
    );
    assert!(
        table.contains("~: DRAM bytes fitted to PM sampling windows"),
        "{table}"
    );
}

/// The what-if of the session's two shapes (4096x4096x4096 and 4096x1x4096, BF16,
/// T,N, on an H100): each as it ran, then at 1 and 64 tokens, with the formulas of
/// `what_if.rs`: FLOPs 2·M·T·K, bytes 2 x (M·K + K·T + M·T), time the larger of
/// FLOPs / 989.4 TFLOP/s and bytes / 3.35 TB/s.
#[test]
fn what_if_gives_the_roofline_at_other_token_counts() {
    use crate::analysis::roofline::what_if::what_if;
    let e = efficiency(&session(), &Overrides::default());
    let (rows, skipped) = what_if(&e, &[1, 64, 4096], &[], None);
    assert!(skipped.is_empty(), "{skipped:?}");
    // (tokens as run, tokens, FLOPs, bytes, bound, roofline ns, measured ns)
    type Row = (u64, u64, f64, f64, Bound, f64, Option<f64>);
    let got: Vec<Row> = rows
        .iter()
        .map(|r| {
            (
                r.tokens_as_run,
                r.tokens,
                r.flops,
                r.bytes,
                r.bound,
                r.roofline_ns,
                r.measured_ns,
            )
        })
        .collect();
    let m = 4096.0f64;
    let expect = |ran: u64, t: u64, measured: Option<f64>| {
        let tf = t as f64;
        let flops = 2.0 * m * tf * m;
        let bytes = 2.0 * (m * m + m * tf + m * tf);
        let (compute, memory) = (flops / H100_BF16 * 1e9, bytes / H100_BW * 1e9);
        let bound = if compute >= memory {
            Bound::Compute
        } else {
            Bound::Memory
        };
        (ran, t, flops, bytes, bound, compute.max(memory), measured)
    };
    assert_eq!(
        got,
        vec![
            // The shape as it ran (one call, 160 µs), then the others.
            expect(4096, 4096, Some(160_000.0)),
            expect(4096, 1, None),
            expect(4096, 64, None),
            // The GEMV (one call of 12 µs).
            expect(1, 1, Some(12_000.0)),
            expect(1, 64, None),
            expect(1, 4096, None),
        ]
    );
    // At 4096 tokens the square GEMM is compute-bound, one token a memory-bound GEMV.
    assert_eq!(rows[0].bound, Bound::Compute);
    assert_eq!(rows[3].bound, Bound::Memory);
    assert_eq!(rows[0].shape, "4096x4096x4096 x1 bf16·bf16->bf16 (fp32) TN");
}
