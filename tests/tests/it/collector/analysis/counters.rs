//! `gpuprof report`'s counter section on a small session written with the real
//! `SessionWriter`: exact output in every format, `--top` applied to it too.

use std::process::Output;

use gpuprof_collector::store::write_parts;
use gpuprof_tests::{gpuprof_command, Scratch};
use wire::testing::{self, counters, string as s, values};
use wire::{CounterPlan, CounterSample, CounterStatus, End, Kernel, ProcessInfo, Record};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(args: &[&str]) -> Output {
    gpuprof_command().args(args).output().unwrap()
}

/// A kernel of 64 blocks of 256 threads.
fn kernel(name: u32, corr: u32, start: u64, end: u64) -> Record {
    Record::Kernel(Kernel {
        grid: [64, 1, 1],
        block: [256, 1, 1],
        registers_per_thread: 40,
        ..testing::kernel(name, corr, start, end)
    })
}

const T0: u64 = 1_700_000_000_000_000_000;

const STATUS: &str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES from cuptiRangeProfilerEnable: \
                      another tool holds the counters";

/// Process 4242 collects kernel counters in two pass groups: gemm's three launches
/// rotate through them, rmsnorm gets none; one sampling window. Process 4243 could not
/// collect counters.
fn frames() -> Vec<(u32, Vec<Record>)> {
    vec![
        (
            4242,
            vec![
                Record::Process(Box::new(ProcessInfo {
                    pid: 4242,
                    ppid: 1,
                    command: vec!["./llm".into()],
                    host: "node1".into(),
                    start_ns: T0,
                    profiler_version: "0.1.0".into(),
                    cupti_api_version: 130401,
                    cupti_layouts: "13.4".into(),
                    cupti_path: "/opt/cuda/libcupti.so.13".into(),
                    environment: Vec::new(),
                })),
                s(1, "_Z4gemmPfS_i"),
                s(2, "rmsnorm_kernel"),
                s(3, "dram__bytes_read.sum"),
                s(4, "dram__bytes_write.sum"),
                s(
                    5,
                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                ),
                Record::CounterPlan(Box::new(CounterPlan {
                    device_id: 0,
                    chip: "GH100".into(),
                    mode: "kernel".into(),
                    groups: vec![vec![3, 4], vec![5]],
                    policy: "first 64 launches of each kernel".into(),
                })),
                // Counters arrive before the activity buffer with the kernels.
                counters(10, 0, &[(3, 1_048_576.0), (4, 524_288.0)]),
                counters(11, 1, &[(5, 61.25)]),
                counters(12, 0, &[(3, 2_097_152.0), (4, 1_000_000.5)]),
                kernel(1, 10, T0 + 1_000, T0 + 4_000),
                kernel(1, 11, T0 + 5_000, T0 + 7_000),
                kernel(1, 12, T0 + 8_000, T0 + 9_000),
                kernel(2, 13, T0 + 9_000, T0 + 9_500),
                Record::CounterSample(CounterSample {
                    device_id: 0,
                    start_ns: T0,
                    end_ns: T0 + 10_000,
                    metrics: values(&[(3, 3_200_000.0)]),
                }),
                Record::End(End { records: 20 }),
            ],
        ),
        (
            4243,
            vec![
                s(7, "rmsnorm_kernel"),
                Record::CounterStatus(CounterStatus {
                    message: STATUS.into(),
                }),
                kernel(7, 1, T0 + 10_000, T0 + 11_000),
                Record::End(End { records: 3 }),
            ],
        ),
    ]
}

/// The session of `frames`, without the counter records when `with_counters` is false.
fn session(name: &str, with_counters: bool) -> Scratch {
    let dir = Scratch::new(name);
    let mut w: Vec<(u32, Vec<Record>)> = Vec::new();
    for (pid, mut records) in frames() {
        if !with_counters {
            records.retain(|r| {
                !matches!(
                    r,
                    Record::KernelCounters(_)
                        | Record::CounterPlan(_)
                        | Record::CounterSample(_)
                        | Record::CounterStatus(_)
                )
            });
        }
        w.push((pid, records.to_vec()));
    }
    write_parts(&dir.join(""), &w).unwrap();
    dir
}

fn report(name: &str, with_counters: bool, args: &[&str]) -> String {
    let dir = session(name, with_counters);
    let mut all = vec!["report", dir.path().to_str().unwrap()];
    all.extend(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    text(&out.stdout)
}

/// The table's counter section: between the kernel table and the copies. The one
/// window [T0, T0 + 10 µs) holds 6.5 µs of pid 4242's kernels (gemm 6, rmsnorm 0.5), so
/// its DRAM bytes split 6000:500 between them; 3.5 µs of it had no kernel.
const TABLE_COUNTERS: &str = "
Counters
  pid 4242, device 0: chip GH100, kernel mode; first 64 launches of each kernel
    group 0: dram__bytes_read.sum, dram__bytes_write.sum
    group 1: sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  pid 4243: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES from cuptiRangeProfilerEnable: another tool holds the counters

Counters by kernel (% of peak; formulas: gpuprof report --help)
  launches  measured  SM active %  tensor pipe %  DRAM %  L2 hit %  occupancy %  kernel
         3         3            -              -       -         -            -  gemm
         2         0            -              -       -         -            -  rmsnorm_kernel
  1 of 2 kernels without counters

Counter samples (GPU-wide sampling windows, sum)
  pid 4242, device 0
    dram__bytes_read.sum  3200000 (1 sample)

Counter samples by kernel (by overlap time: .sum split, others time-weighted mean)
  gemm: from 1 sample, 6.000 µs inside windows
    dram__bytes_read.sum  2953846.154 (sum)
  rmsnorm_kernel: from 1 sample, 0.500 µs inside windows
    dram__bytes_read.sum  246153.846 (sum)
  idle: 0 windows without kernels; 3.500 of 10.000 µs sampled without kernels

Counter samples fitted by kernel class (per launch, ratios as they are; ± 2 standard errors; split: by overlap)
  gemm grid 64x1x1 block 256x1x1: 3 launches
    dram__bytes_read.sum  - (1 window, split 984615.385, residual 0.00 %)
    dram__bytes_read.sum not determined: ran in 1 sampling window, 2 needed
  rmsnorm_kernel grid 64x1x1 block 256x1x1: 1 launch
    dram__bytes_read.sum  - (1 window, split 246153.846, residual 0.00 %)
    dram__bytes_read.sum not determined: ran in 1 sampling window, 2 needed
";

/// `--counters raw`: the metric means of each kernel (none is 0 for every kernel).
const TABLE_RAW_BY_KERNEL: &str = "
Counters by kernel (mean per launch)
  gemm: 3 of 3 launches with counters
    dram__bytes_read.sum                                                      1572864 (2 launches)
    dram__bytes_write.sum                                                   762144.25 (2 launches)
    sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active      61.25 (1 launch)
  rmsnorm_kernel: no counters (2 launches)
  1 of 2 kernels without counters
";

/// With `--top 1`, only gemm's counters (the count of kernels without counters is over
/// all kernels).
const TABLE_COUNTERS_TOP_1: &str = "
Counters
  pid 4242, device 0: chip GH100, kernel mode; first 64 launches of each kernel
    group 0: dram__bytes_read.sum, dram__bytes_write.sum
    group 1: sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  pid 4243: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES from cuptiRangeProfilerEnable: another tool holds the counters

Counters by kernel (% of peak; formulas: gpuprof report --help)
  launches  measured  SM active %  tensor pipe %  DRAM %  L2 hit %  occupancy %  kernel
         3         3            -              -       -         -            -  gemm
  1 of 2 kernels without counters

Counter samples (GPU-wide sampling windows, sum)
  pid 4242, device 0
    dram__bytes_read.sum  3200000 (1 sample)

Counter samples by kernel (by overlap time: .sum split, others time-weighted mean)
  gemm: from 1 sample, 6.000 µs inside windows
    dram__bytes_read.sum  2953846.154 (sum)
  idle: 0 windows without kernels; 3.500 of 10.000 µs sampled without kernels

Counter samples fitted by kernel class (per launch, ratios as they are; ± 2 standard errors; split: by overlap)
  gemm grid 64x1x1 block 256x1x1: 3 launches
    dram__bytes_read.sum  - (1 window, split 984615.385, residual 0.00 %)
    dram__bytes_read.sum not determined: ran in 1 sampling window, 2 needed
";

/// The CSV's counter sections, after the others.
const CSV_COUNTERS: &str = "
# counter_plans
pid,device_id,chip,mode,policy,group,metric
4242,0,GH100,kernel,first 64 launches of each kernel,0,dram__bytes_read.sum
4242,0,GH100,kernel,first 64 launches of each kernel,0,dram__bytes_write.sum
4242,0,GH100,kernel,first 64 launches of each kernel,1,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active

# counter_statuses
pid,message
4243,CUPTI_ERROR_INSUFFICIENT_PRIVILEGES from cuptiRangeProfilerEnable: another tool holds the counters

# kernel_counters
name,mangled,launches_with_counters,metric,launches,mean,sum
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,3,dram__bytes_read.sum,2,1572864.0,3145728.0
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,3,dram__bytes_write.sum,2,762144.25,1524288.5
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,3,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,1,61.25,61.25
rmsnorm_kernel,rmsnorm_kernel,0,,,,

# counter_pct
name,mangled,launches,launches_with_counters,sm_active_pct,tensor_pipe_pct,dram_throughput_pct,l2_hit_rate_pct,achieved_occupancy_pct
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,3,3,,,,,

# counter_samples
pid,device_id,metric,samples,sum
4242,0,dram__bytes_read.sum,1,3200000.0

# sampled_kernel_counters
name,mangled,samples,time_ns,metric,kind,value
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,1,6000,dram__bytes_read.sum,sum,2953846.153846154
rmsnorm_kernel,rmsnorm_kernel,1,500,dram__bytes_read.sum,sum,246153.84615384616
(idle),,0,3500,,,

# fitted_counters
pid,device_id,name,mangled,grid,block,shape,calls,gpu_ns,metric,kind,windows,overlap_ns,value,std_error,split,residual,undetermined
4242,0,\"gemm(float*, float*, int)\",_Z4gemmPfS_i,64x1x1,256x1x1,,3,6000,dram__bytes_read.sum,amount,1,6000,,,984615.3846153846,0.0,\"ran in 1 sampling window, 2 needed\"
4242,0,rmsnorm_kernel,rmsnorm_kernel,64x1x1,256x1x1,,1,500,dram__bytes_read.sum,amount,1,500,,,246153.84615384616,0.0,\"ran in 1 sampling window, 2 needed\"
";

/// `text` without `section`, which must be in it once.
fn without(text: &str, section: &str) -> String {
    assert_eq!(text.matches(section).count(), 1, "{text}");
    text.replacen(section, "", 1)
}

#[test]
fn table_counter_section_is_exact_and_the_rest_unchanged() {
    let with = report("counters-table", true, &[]);
    let plain = report("counters-table-plain", false, &[]);
    assert!(!plain.contains("Counters"), "{plain}");
    assert_eq!(without(&with, TABLE_COUNTERS), plain);
    // Placed after the kernel table, before the roofline (none here: no FLOPs).
    assert!(with.contains(&format!(
        "rmsnorm_kernel\n{TABLE_COUNTERS}\nRoofline\n  (no FLOPs"
    )));
}

/// `--counters raw` shows the means instead of the percentages, `--counters off` no
/// counter section at all; the rest of the table is the same.
/// The default by-kernel section of [`TABLE_COUNTERS`]: no kernel has all the metrics
/// of any percentage, so every cell is "-".
const PCT_BY_KERNEL: &str = "
Counters by kernel (% of peak; formulas: gpuprof report --help)
  launches  measured  SM active %  tensor pipe %  DRAM %  L2 hit %  occupancy %  kernel
         3         3            -              -       -         -            -  gemm
         2         0            -              -       -         -            -  rmsnorm_kernel
  1 of 2 kernels without counters
";

/// `--counters raw` shows the means instead of the percentages, `--counters off` no
/// counter section at all; the rest of the table is the same.
#[test]
fn table_counter_views() {
    let pct = report("counters-view-pct", true, &[]);
    assert!(TABLE_COUNTERS.contains(PCT_BY_KERNEL));
    let raw = report("counters-view-raw", true, &["--counters", "raw"]);
    assert_eq!(
        raw,
        without(&pct, PCT_BY_KERNEL).replacen(
            "\n\nCounter samples",
            &format!("\n{TABLE_RAW_BY_KERNEL}\nCounter samples"),
            1
        )
    );
    let off = report("counters-view-off", true, &["--counters", "off"]);
    let plain = report("counters-view-plain", false, &[]);
    assert_eq!(off, plain);
}

#[test]
fn table_counter_section_follows_top() {
    let with = report("counters-top", true, &["--top", "1"]);
    let plain = report("counters-top-plain", false, &["--top", "1"]);
    assert_eq!(without(&with, TABLE_COUNTERS_TOP_1), plain);
}

#[test]
fn csv_counter_sections_are_exact_and_the_rest_unchanged() {
    let with = report("counters-csv", true, &["--format", "csv"]);
    let plain = report("counters-csv-plain", false, &["--format", "csv"]);
    assert!(!plain.contains("counter"), "{plain}");
    assert!(with.ends_with(CSV_COUNTERS), "{with}");
    assert_eq!(without(&with, CSV_COUNTERS), plain);
}

#[test]
fn json_counters_are_exact_and_the_rest_unchanged() {
    let parse = |s: String| -> serde_json::Value { serde_json::from_str(&s).unwrap() };
    let mut with = parse(report("counters-json", true, &["--format", "json"]));
    let plain = parse(report("counters-json-plain", false, &["--format", "json"]));
    assert!(plain.get("counters").is_none());
    let expected = serde_json::json!({
        "plans": [{
            "pid": 4242, "device_id": 0, "chip": "GH100", "mode": "kernel",
            "policy": "first 64 launches of each kernel",
            "groups": [
                ["dram__bytes_read.sum", "dram__bytes_write.sum"],
                ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"],
            ],
        }],
        "statuses": [{"pid": 4243, "message": STATUS}],
        "kernels": [
            {
                "mangled": "_Z4gemmPfS_i", "name": "gemm(float*, float*, int)",
                "launches": 3, "launches_with_counters": 3,
                "metrics": [
                    {"metric": "dram__bytes_read.sum", "launches": 2, "mean": 1572864.0, "sum": 3145728.0},
                    {"metric": "dram__bytes_write.sum", "launches": 2, "mean": 762144.25, "sum": 1524288.5},
                    {
                        "metric": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                        "launches": 1, "mean": 61.25, "sum": 61.25,
                    },
                ],
                // No figure has all its metrics (no GPU time, none of the default
                // set's percentages): every one is null, none is unknown.
                "pct": {
                    "sm_active": null, "tensor_pipe": null, "dram_throughput": null,
                    "l2_hit_rate": null, "achieved_occupancy": null,
                },
                "sample_count": 1, "sample_time_ns": 6000,
                "sample_metrics": [
                    {"metric": "dram__bytes_read.sum", "samples": 1, "kind": "sum", "value": 2953846.153846154},
                ],
            },
            {
                "mangled": "rmsnorm_kernel", "name": "rmsnorm_kernel",
                "launches": 2, "launches_with_counters": 0, "metrics": [],
                "sample_count": 1, "sample_time_ns": 500,
                "sample_metrics": [
                    {"metric": "dram__bytes_read.sum", "samples": 1, "kind": "sum", "value": 246153.84615384616},
                ],
            },
        ],
        "kernels_without_counters": 1,
        "unattributed": 0,
        "samples": [
            {"pid": 4242, "device_id": 0, "metric": "dram__bytes_read.sum", "samples": 1, "sum": 3200000.0},
        ],
        // The window [T0, T0 + 10 µs) holds 6.5 µs of kernels of pid 4242 (gemm 6,
        // rmsnorm 0.5): its DRAM bytes split 6000:500; 3.5 µs without kernels.
        "sample_idle": {"windows": 0, "sampled_ns": 10000, "idle_ns": 3500, "metrics": []},
        // One window for two classes: neither determined, the split shown beside.
        "fitted": [
            {
                "pid": 4242, "device_id": 0, "name": "gemm(float*, float*, int)",
                "mangled": "_Z4gemmPfS_i", "grid": [64, 1, 1], "block": [256, 1, 1],
                "shape": null, "calls": 3, "gpu_ns": 6000,
                "metrics": [{
                    "metric": "dram__bytes_read.sum", "kind": "amount", "windows": 1,
                    "overlap_ns": 6000, "value": null, "std_error": null, "split": 984615.3846153846,
                    "residual": 0.0, "undetermined": "ran in 1 sampling window, 2 needed",
                }],
            },
            {
                "pid": 4242, "device_id": 0, "name": "rmsnorm_kernel",
                "mangled": "rmsnorm_kernel", "grid": [64, 1, 1], "block": [256, 1, 1],
                "shape": null, "calls": 1, "gpu_ns": 500,
                "metrics": [{
                    "metric": "dram__bytes_read.sum", "kind": "amount", "windows": 1,
                    "overlap_ns": 500, "value": null, "std_error": null, "split": 246153.84615384616,
                    "residual": 0.0, "undetermined": "ran in 1 sampling window, 2 needed",
                }],
            },
        ],
        "fitted_left_out": {"not_finite": 0, "crowded": 0, "metrics": 0, "inconsistent": 0},
    });
    assert_eq!(with["counters"], expected);
    with.as_object_mut().unwrap().remove("counters");
    assert_eq!(with, plain);

    let top = parse(report(
        "counters-json-top",
        true,
        &["--format", "json", "--top", "1"],
    ));
    let kernels = top["counters"]["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    assert_eq!(kernels[0], expected["kernels"][0]);
    assert_eq!(top["counters"]["kernels_without_counters"], 1);
}

/// Process 5000 in sampling mode: "attn" runs [0, 150) ns, "mlp" [150, 200), windows
/// of 100 ns at 0, 100 and 200. attn has window 1 alone and half of window 2's kernel
/// time; window 3 is idle. DRAM bytes: attn 1000 + 600 * 50 / 100 = 1300, mlp 300,
/// idle 2: 1602 in all, as sampled. Throughput (not additive): attn's mean weighted by
/// its overlap, (50 * 100 + 80 * 50) / 150 = 60.
fn sampling_session(name: &str, with_samples: bool) -> Scratch {
    let sample = |start: u64, read: f64, pct: f64| {
        Record::CounterSample(CounterSample {
            device_id: 0,
            start_ns: T0 + start,
            end_ns: T0 + start + 100,
            metrics: values(&[(3, read), (4, pct)]),
        })
    };
    let mut records = vec![
        s(1, "attn"),
        s(2, "mlp"),
        s(3, "dram__bytes_read.sum"),
        s(4, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        Record::CounterPlan(Box::new(CounterPlan {
            device_id: 0,
            chip: "GH100".into(),
            mode: "sampling".into(),
            groups: vec![vec![3, 4]],
            policy: "every 0.1 µs".into(),
        })),
        kernel(1, 1, T0, T0 + 150),
        kernel(2, 2, T0 + 150, T0 + 200),
    ];
    if with_samples {
        records.extend([
            sample(0, 1000.0, 50.0),
            sample(100, 600.0, 80.0),
            sample(200, 2.0, 1.0),
        ]);
    }
    records.push(Record::End(End { records: 10 }));
    let dir = Scratch::new(name);
    let w: Vec<(u32, Vec<Record>)> = vec![(5000, records)];
    write_parts(&dir.join(""), &w).unwrap();
    dir
}

fn sampling_report(name: &str, with_samples: bool, args: &[&str]) -> String {
    let dir = sampling_session(name, with_samples);
    let mut all = vec!["report", dir.path().to_str().unwrap()];
    all.extend(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

const TABLE_SAMPLED: &str = "
Counter samples (GPU-wide sampling windows, sum)
  pid 5000, device 0
    dram__bytes_read.sum                              1602 (3 samples)
    sm__throughput.avg.pct_of_peak_sustained_elapsed   131 (3 samples)

Counter samples by kernel (by overlap time: .sum split, others time-weighted mean)
  attn: from 2 samples, 0.150 µs inside windows
    dram__bytes_read.sum                              1300 (sum)
    sm__throughput.avg.pct_of_peak_sustained_elapsed    60 (mean)
  mlp: from 1 sample, 0.050 µs inside windows
    dram__bytes_read.sum                              300 (sum)
    sm__throughput.avg.pct_of_peak_sustained_elapsed   80 (mean)
  idle: 1 window without kernels; 0.100 of 0.300 µs sampled without kernels
    dram__bytes_read.sum                              2 (sum)
    sm__throughput.avg.pct_of_peak_sustained_elapsed  1 (mean)

Counter samples fitted by kernel class (per launch, ratios as they are; ± 2 standard errors; split: by overlap)
  attn grid 64x1x1 block 256x1x1: 1 launch
    dram__bytes_read.sum                              1500 ± 6 (2 windows, split 1300, residual 0.17 %)
    sm__throughput.avg.pct_of_peak_sustained_elapsed    50 ± 2 (2 windows, split 60, residual 1.06 %)
  mlp grid 64x1x1 block 256x1x1: 1 launch
    dram__bytes_read.sum                              - (1 window, split 300, residual 0.17 %)
    sm__throughput.avg.pct_of_peak_sustained_elapsed  - (1 window, split 80, residual 1.06 %)
    dram__bytes_read.sum not determined: ran in 1 sampling window, 2 needed
    sm__throughput.avg.pct_of_peak_sustained_elapsed not determined: ran in 1 sampling window, 2 needed

Roofline
  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; see GPUPROF_GEMM and GPUPROF_COUNTERS)

Launch shape by kernel config (theoretical, from each launch's grid and block)
";

const CSV_SAMPLED: &str = "
# sampled_kernel_counters
name,mangled,samples,time_ns,metric,kind,value
attn,attn,2,150,dram__bytes_read.sum,sum,1300.0
attn,attn,2,150,sm__throughput.avg.pct_of_peak_sustained_elapsed,mean,60.0
mlp,mlp,1,50,dram__bytes_read.sum,sum,300.0
mlp,mlp,1,50,sm__throughput.avg.pct_of_peak_sustained_elapsed,mean,80.0
(idle),,1,100,dram__bytes_read.sum,sum,2.0
(idle),,1,100,sm__throughput.avg.pct_of_peak_sustained_elapsed,mean,1.0

# sampled_counter_pct
name,mangled,launches,launches_with_counters,sm_active_pct,tensor_pipe_pct,dram_throughput_pct,l2_hit_rate_pct,achieved_occupancy_pct
attn,attn,1,0,,,,,

# fitted_counters
pid,device_id,name,mangled,grid,block,shape,calls,gpu_ns,metric,kind,windows,overlap_ns,value,std_error,split,residual,undetermined
5000,0,attn,attn,64x1x1,256x1x1,,1,150,dram__bytes_read.sum,amount,2,150,1499.9999999999998,3.0,1300.0,0.001714983329392635,
5000,0,attn,attn,64x1x1,256x1x1,,1,150,sm__throughput.avg.pct_of_peak_sustained_elapsed,ratio_elapsed,2,150,50.0,0.9999999999992549,60.0,0.010599383345806991,
5000,0,mlp,mlp,64x1x1,256x1x1,,1,50,dram__bytes_read.sum,amount,1,50,,,300.0,0.001714983329392635,\"ran in 1 sampling window, 2 needed\"
5000,0,mlp,mlp,64x1x1,256x1x1,,1,50,sm__throughput.avg.pct_of_peak_sustained_elapsed,ratio_elapsed,1,50,,,80.0,0.010599383345806991,\"ran in 1 sampling window, 2 needed\"
";

#[test]
fn samples_are_attributed_to_kernels_by_overlap_with_idle_time_kept() {
    let table = sampling_report("sampled-table", true, &[]);
    assert!(table.contains(TABLE_SAMPLED), "{table}");
    let csv = sampling_report("sampled-csv", true, &["--format", "csv"]);
    assert!(csv.ends_with(CSV_SAMPLED), "{csv}");

    let json: serde_json::Value = serde_json::from_str(&sampling_report(
        "sampled-json",
        true,
        &["--format", "json"],
    ))
    .unwrap();
    let c = &json["counters"];
    let sampled = |i: usize| {
        let k = &c["kernels"][i];
        (
            k["name"].clone(),
            k["sample_count"].clone(),
            k["sample_time_ns"].clone(),
            k["sample_metrics"].clone(),
        )
    };
    let metrics = |read: f64, pct: f64, n: u64| {
        serde_json::json!([
            {"metric": "dram__bytes_read.sum", "samples": n, "kind": "sum", "value": read},
            {
                "metric": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "samples": n, "kind": "mean", "value": pct,
            },
        ])
    };
    assert_eq!(
        sampled(0),
        (
            "attn".into(),
            2.into(),
            150.into(),
            metrics(1300.0, 60.0, 2)
        )
    );
    assert_eq!(
        sampled(1),
        ("mlp".into(), 1.into(), 50.into(), metrics(300.0, 80.0, 1))
    );
    assert_eq!(
        c["sample_idle"],
        serde_json::json!({
            "windows": 1, "sampled_ns": 300, "idle_ns": 100, "metrics": metrics(2.0, 1.0, 1),
        })
    );

    // Without samples (a plan only), nothing of it shows.
    let table = sampling_report("unsampled-table", false, &[]);
    assert!(table.contains("Counters\n"), "{table}");
    assert!(!table.contains("Counter samples"), "{table}");
    let csv = sampling_report("unsampled-csv", false, &["--format", "csv"]);
    assert!(csv.contains("# counter_samples\npid,device_id,metric,samples,sum\n"));
    assert!(!csv.contains("sampled"), "{csv}");
    let json = sampling_report("unsampled-json", false, &["--format", "json"]);
    assert!(!json.contains("sample_"), "{json}");
}

/// A metric name longer than a format width may be (u16::MAX) is printed, padded, not a
/// panic: the session file decides how long names are.
#[test]
fn a_metric_name_of_70000_characters_is_printed() {
    let long = "m".repeat(70_000);
    let dir = Scratch::new("counters-long-name");
    let mut w: Vec<(u32, Vec<Record>)> = Vec::new();
    for (pid, records) in frames() {
        let records: Vec<Record> = records
            .into_iter()
            .map(|r| match r {
                Record::String(ref st) if pid == 4242 && st.id == 5 => s(5, &long),
                r => r,
            })
            .collect();
        w.push((pid, records.to_vec()));
    }
    write_parts(&dir.join(""), &w).unwrap();
    let out = run(&["report", "--counters", "raw", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Names padded to at most 80 characters (the long one is printed whole), two
    // spaces, values right-aligned to the widest ("762144.25"); a note that would take
    // the line past 120 columns goes on a line of its own.
    let read = format!(
        "\n    dram__bytes_read.sum{}    1572864 (2 launches)\n",
        " ".repeat(80 - "dram__bytes_read.sum".len())
    );
    let tensor = format!("\n    {long}      61.25\n      (1 launch)\n");
    assert!(
        stdout.contains(&read),
        "the DRAM row is not padded to the long name"
    );
    assert!(stdout.contains(&tensor), "the long name's row is missing");
}
