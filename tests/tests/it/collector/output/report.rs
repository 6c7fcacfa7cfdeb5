//! `gpuprof report` and `gpuprof trace` on small sessions written with the real
//! session writer (`store::write_parts`, one part per frame): exact output in every
//! format, damaged sessions, the trace read back.

use std::path::Path;
use std::process::Output;

use gpuprof_collector::store::write_parts;
use gpuprof_tests::{gpuprof_command, Scratch};
use wire::testing::{self, marker, string as s};
use wire::{
    marker_flags, ContextInfo, DeviceInfo, DropSource, Dropped, End, Kernel, Memcpy, Memset,
    ProcessInfo, Record,
};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(args: &[&str]) -> Output {
    gpuprof_command().args(args).output().unwrap()
}

/// Kernel 1 runs 64 blocks, the others one; 256 threads, 1 KiB of dynamic shared memory.
fn kernel(name: u32, corr: u32, start: u64, end: u64) -> Record {
    Record::Kernel(Kernel {
        grid: if name == 1 { [64, 1, 1] } else { [1, 1, 1] },
        block: [256, 1, 1],
        registers_per_thread: 40,
        dynamic_shared_memory: 1024,
        ..testing::kernel(name, corr, start, end)
    })
}

/// A launch of 100 ns on thread 31.
fn launch(corr: u32, start: u64) -> Record {
    testing::launch(corr, 31, start, start + 100)
}

const T0: u64 = 1_700_000_000_000_000_000;

/// The frames of a small two-process session: (pid, records) per frame.
fn frames() -> Vec<(u32, Vec<Record>)> {
    vec![
        (
            4242,
            vec![
                Record::Process(Box::new(ProcessInfo {
                    pid: 4242,
                    ppid: 1,
                    command: vec!["./llm".into(), "--steps".into(), "2".into()],
                    host: "node1".into(),
                    start_ns: T0,
                    profiler_version: "0.1.0".into(),
                    cupti_api_version: 130401,
                    cupti_layouts: "13.4".into(),
                    cupti_path: "/opt/cuda/libcupti.so.13".into(),
                    environment: Vec::new(),
                })),
                Record::Device(DeviceInfo {
                    id: 0,
                    name: "NVIDIA H100 80GB HBM3".into(),
                    compute_capability: (9, 0),
                    sm_count: 132,
                    core_clock_khz: 1_980_000,
                    memory_clock_khz: 2_619_000,
                    memory_bus_width_bits: 5120,
                    global_memory_bytes: 85_000_000_000,
                    l2_cache_bytes: 52_428_800,
                    uuid: [
                        0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67,
                        0x89, 0xab, 0xcd, 0xef,
                    ],
                }),
                Record::Context(ContextInfo {
                    context_id: 1,
                    device_id: 0,
                }),
                s(1, "_Z4gemmPfS_i"),
                s(2, "rmsnorm_kernel"),
                s(3, "decode"),
                s(4, "llm"),
                s(5, "step"),
            ],
        ),
        (
            4242,
            vec![
                marker(marker_flags::START, 1, 31, T0 + 1_000, 3, 0),
                launch(10, T0 + 1_100),
                launch(11, T0 + 1_300),
                launch(12, T0 + 1_500),
                marker(marker_flags::START, 2, 0, T0 + 2_000, 5, 4),
                kernel(1, 10, T0 + 2_000, T0 + 5_000),
                kernel(2, 11, T0 + 5_000, T0 + 5_500),
                kernel(1, 12, T0 + 6_000, T0 + 8_000),
                marker(marker_flags::END, 2, 0, T0 + 5_800, 0, 0),
                marker(marker_flags::END, 1, 31, T0 + 9_000, 0, 0),
                Record::Memcpy(Memcpy {
                    device_id: 0,
                    context_id: 1,
                    stream_id: 7,
                    correlation_id: 9,
                    start_ns: T0 + 500,
                    end_ns: T0 + 1_500,
                    bytes: 1 << 20,
                    copy_kind: 1,
                    src_kind: 1,
                    dst_kind: 3,
                    graph_node_id: 0,
                }),
                Record::Memset(Memset {
                    device_id: 0,
                    context_id: 1,
                    stream_id: 7,
                    correlation_id: 8,
                    start_ns: T0 + 100,
                    end_ns: T0 + 300,
                    bytes: 4096,
                    value: 0,
                    memory_kind: 3,
                    graph_node_id: 0,
                }),
            ],
        ),
        (
            4243,
            vec![
                s(7, "rmsnorm_kernel"),
                kernel(7, 1, T0 + 10_000, T0 + 11_500),
            ],
        ),
        (
            4242,
            vec![
                kernel(1, 13, T0 + 12_000, T0 + 13_000),
                Record::Dropped(Dropped {
                    source: DropSource::Cupti,
                    records: 2,
                }),
                Record::End(End { records: 20 }),
            ],
        ),
    ]
}

fn write_session(dir: &Path, frames: &[(u32, Vec<Record>)]) {
    write_parts(dir, frames).unwrap();
}

fn session(name: &str) -> (Scratch, ()) {
    let dir = Scratch::new(name);
    write_session(dir.path(), &frames());
    (dir, ())
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

const TABLE: &str = "\
Processes
  pid 4242: ./llm --steps 2
    host node1; CUPTI API 130401 (record layouts 13.4) from /opt/cuda/libcupti.so.13
    device 0: NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)
    4 kernels, 6.500 µs GPU time; stream complete
  pid 4243: (no process record)
    1 kernels, 1.500 µs GPU time; stream did not finish

Kernels by GPU time (5 kernels, 8.000 µs)
  time %  total µs  calls  mean µs  median µs  min µs  max µs  stddev µs  grid    block    name
   75.00     6.000      3    2.000      2.000   1.000   3.000      1.000  64x1x1  256x1x1  gemm
   25.00     2.000      2    1.000      1.000   0.500   1.500      0.707  1x1x1   256x1x1  rmsnorm_kernel

Roofline
  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; see GPUPROF_GEMM and GPUPROF_COUNTERS)

Launch shape by kernel config (theoretical, from each launch's grid and block)
  time %  grid    block    regs  smem KiB  blk/SM  held by  occ %  ach %  waves  SMs %  name
   75.00  64x1x1  256x1x1    40       1.0       6  regs      75.0      -   0.08   48.5  gemm
          └ 64 blocks on 132 SMs: 48.5% of SMs busy
   18.75  1x1x1   256x1x1    40       1.0       -  -            -      -      -      -  rmsnorm_kernel
          └ no occupancy: no device record for its GPU
    6.25  1x1x1   256x1x1    40       1.0       6  regs      75.0      -   0.00    0.8  rmsnorm_kernel
          └ 1 block on 132 SMs: 0.8% of SMs busy
  blk/SM: blocks an SM holds at once, held by registers, shared memory, warps or the block limit; occ %: theoretical
    occupancy (resident warps over the SM's most); ach %: achieved occupancy (counter mean); waves: blocks over blocks
    the GPU holds at once; SMs %: SMs given a block in the first wave (rules: gpuprof report --help)

Memory copies and sets
  kind    count    bytes  total µs
  HtoD        1  1048576     1.000
  memset      1     4096     0.200

NVTX ranges
  count  open  wall µs  kernels  GPU µs  GPU time %  range
      1     0    8.000        3   5.500       68.75  decode
      1     0    3.800        2   3.500       43.75  llm: step

Dropped records
  source       records
  cupti              2
  channel            0
  ring               0
  undelivered        0
  unwritten          0
  unsaved            0

Processes whose stream did not finish: 4243
  (they or the collector stopped first: what they did not deliver is in the
   undelivered and unwritten rows above when the collector saw them stop;
   when the collector itself stopped, records it had not sealed are lost, uncounted)
";

#[test]
fn report_table_is_exact() {
    let (dir, _) = session("report-table");
    for arg in [dir.path().to_path_buf(), dir.join("parts")] {
        let out = run(&["report", arg.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), TABLE);
        assert_eq!(text(&out.stderr), "");
    }
    // --full-names: the demangled name, whole.
    let out = run(&["report", dir.path().to_str().unwrap(), "--full-names"]);
    assert_eq!(
        text(&out.stdout),
        TABLE
            .replace("256x1x1  gemm\n", "256x1x1  gemm(float*, float*, int)\n")
            .replace("48.5  gemm\n", "48.5  gemm(float*, float*, int)\n")
    );
}

const CSV: &str = "\
# processes
pid,known,command,host,cupti_api_version,cupti_layouts,cupti_path,kernels,kernel_ns,finished
4242,true,./llm --steps 2,node1,130401,13.4,/opt/cuda/libcupti.so.13,4,6500,true
4243,false,,,0,,,1,1500,false

# devices
pid,id,name,compute_capability,sm_count,uuid
4242,0,NVIDIA H100 80GB HBM3,9.0,132,GPU-12345678-9abc-def0-0123-456789abcdef

# kernels
name,mangled,calls,total_ns,mean_ns,min_ns,max_ns,gpu_time_pct,grid,block,short_name,median_ns,median_exact,stddev_ns,configs
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,3,6000,2000,1000,3000,75.0,64x1x1,256x1x1,gemm,2000,true,1000.0,1
rmsnorm_kernel,rmsnorm_kernel,2,2000,1000,500,1500,25.0,1x1x1,256x1x1,rmsnorm_kernel,1000,true,707.1067811865476,1

# kernel_configs
name,mangled,grid,block,calls,total_ns,mean_ns,min_ns,max_ns,median_ns,median_exact,stddev_ns,gpu_time_pct
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,64x1x1,256x1x1,3,6000,2000,1000,3000,2000,true,1000.0,75.0
rmsnorm_kernel,rmsnorm_kernel,1x1x1,256x1x1,2,2000,1000,500,1500,1000,true,707.1067811865476,25.0

# launch_shapes
name,mangled,grid,block,compute_capability,sm_count,calls,total_ns,gpu_time_pct,blocks,threads_per_block,registers_per_thread,shared_memory_bytes,shared_memory_bytes_min,blocks_per_sm,limited_by,theoretical_occupancy_pct,achieved_occupancy_pct,blocks_per_wave,waves,sms_busy_pct,wave_efficiency_pct,findings,unknown_why
\"gemm(float*, float*, int)\",_Z4gemmPfS_i,64x1x1,256x1x1,9.0,132,3,6000,75.0,64,256,40,1024,1024,6,registers,75.0,,792,0.0808,48.48,8.08,64 blocks on 132 SMs: 48.5% of SMs busy,
rmsnorm_kernel,rmsnorm_kernel,1x1x1,256x1x1,,,1,1500,18.75,1,256,40,1024,1024,,,,,,,,,,no device record for its GPU
rmsnorm_kernel,rmsnorm_kernel,1x1x1,256x1x1,9.0,132,1,500,6.25,1,256,40,1024,1024,6,registers,75.0,,792,0.0013,0.76,0.13,1 block on 132 SMs: 0.8% of SMs busy,

# transfers
kind,count,bytes,total_ns
HtoD,1,1048576,1000
memset,1,4096,200

# nvtx_ranges
domain,name,count,open,wall_ns,kernels,gpu_ns,gpu_time_pct
,decode,1,0,8000,3,5500,68.75
llm,step,1,0,3800,2,3500,43.75

# dropped
source,records
cupti,2
channel,0
ring,0
undelivered,0
unwritten,0
unsaved,0

# unfinished
pid
4243
";

#[test]
fn report_csv_is_exact() {
    let (dir, _) = session("report-csv");
    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), CSV);
}

#[test]
fn report_json_is_exact() {
    let (dir, _) = session("report-json");
    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = serde_json::json!({
        "processes": [
            {
                "pid": 4242, "known": true, "command": ["./llm", "--steps", "2"], "host": "node1",
                "cupti_api_version": 130401, "cupti_layouts": "13.4", "cupti_path": "/opt/cuda/libcupti.so.13",
                "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "sm_count": 132,
                    "uuid": "GPU-12345678-9abc-def0-0123-456789abcdef"}],
                "kernels": 4, "kernel_ns": 6500, "finished": true,
            },
            {
                "pid": 4243, "known": false, "command": [], "host": "", "cupti_api_version": 0,
                "cupti_layouts": "", "cupti_path": "", "devices": [], "kernels": 1, "kernel_ns": 1500,
                "finished": false,
            },
        ],
        "kernel_count": 5,
        "kernel_ns": 8000,
        "kernels": [
            {
                "name": "gemm(float*, float*, int)", "mangled": "_Z4gemmPfS_i", "calls": 3, "total_ns": 6000,
                "mean_ns": 2000, "min_ns": 1000, "max_ns": 3000, "gpu_time_pct": 75.0, "grid": [64, 1, 1],
                "block": [256, 1, 1], "short_name": "gemm", "median_ns": 2000, "median_exact": true,
                // statistics.stdev([3000, 2000, 1000])
                "stddev_ns": 1000.0,
                "configs": [{
                    "grid": [64, 1, 1], "block": [256, 1, 1], "calls": 3, "total_ns": 6000, "mean_ns": 2000,
                    "min_ns": 1000, "max_ns": 3000, "median_ns": 2000, "median_exact": true,
                    "stddev_ns": 1000.0, "gpu_time_pct": 75.0,
                }],
            },
            {
                "name": "rmsnorm_kernel", "mangled": "rmsnorm_kernel", "calls": 2, "total_ns": 2000,
                "mean_ns": 1000, "min_ns": 500, "max_ns": 1500, "gpu_time_pct": 25.0, "grid": [1, 1, 1],
                "block": [256, 1, 1], "short_name": "rmsnorm_kernel", "median_ns": 1000, "median_exact": true,
                // statistics.stdev([500, 1500])
                "stddev_ns": 707.1067811865476,
                "configs": [{
                    "grid": [1, 1, 1], "block": [256, 1, 1], "calls": 2, "total_ns": 2000, "mean_ns": 1000,
                    "min_ns": 500, "max_ns": 1500, "median_ns": 1000, "median_exact": true,
                    "stddev_ns": 707.1067811865476, "gpu_time_pct": 25.0,
                }],
            },
        ],
        "transfers": [
            {"kind": "HtoD", "count": 1, "bytes": 1048576, "total_ns": 1000},
            {"kind": "memset", "count": 1, "bytes": 4096, "total_ns": 200},
        ],
        "nvtx_ranges": [
            {"domain": "", "name": "decode", "count": 1, "open": 0, "wall_ns": 8000, "kernels": 3, "gpu_ns": 5500, "gpu_time_pct": 68.75},
            {"domain": "llm", "name": "step", "count": 1, "open": 0, "wall_ns": 3800, "kernels": 2, "gpu_ns": 3500, "gpu_time_pct": 43.75},
        ],
        "unmatched_range_ends": 0,
        "dropped": [
            {"source": "cupti", "records": 2},
            {"source": "channel", "records": 0},
            {"source": "ring", "records": 0},
            {"source": "undelivered", "records": 0},
            {"source": "unwritten", "records": 0},
            {"source": "unsaved", "records": 0},
        ],
        "unfinished": [4243],
        // 40 registers x 32 threads = 1,280 per warp (a multiple of 256); 16,384 per
        // sub-partition hold 12 warps, 48 an SM: 6 blocks of 8 warps. Shared memory
        // 1 KiB + 1 KiB reserved: 114 blocks; warps: 8; block limit 32.
        "launch_shapes": [
            {
                "name": "gemm(float*, float*, int)", "mangled": "_Z4gemmPfS_i", "grid": [64, 1, 1],
                "block": [256, 1, 1], "compute_capability": [9, 0], "sm_count": 132, "calls": 3,
                "total_ns": 6000, "gpu_time_pct": 75.0, "blocks": 64, "threads_per_block": 256,
                "registers_per_thread": 40, "shared_memory_bytes": 1024, "shared_memory_bytes_min": 1024,
                "blocks_per_sm": 6, "limited_by": ["registers"], "theoretical_occupancy_pct": 75.0,
                "achieved_occupancy_pct": null, "blocks_per_wave": 792, "waves": 0.0808,
                "sms_busy_pct": 48.48, "wave_efficiency_pct": 8.08,
                "findings": ["64 blocks on 132 SMs: 48.5% of SMs busy"], "unknown_why": null,
            },
            {
                "name": "rmsnorm_kernel", "mangled": "rmsnorm_kernel", "grid": [1, 1, 1],
                "block": [256, 1, 1], "compute_capability": null, "sm_count": null, "calls": 1,
                "total_ns": 1500, "gpu_time_pct": 18.75, "blocks": 1, "threads_per_block": 256,
                "registers_per_thread": 40, "shared_memory_bytes": 1024, "shared_memory_bytes_min": 1024,
                "blocks_per_sm": null, "limited_by": null, "theoretical_occupancy_pct": null,
                "achieved_occupancy_pct": null, "blocks_per_wave": null, "waves": null,
                "sms_busy_pct": null, "wave_efficiency_pct": null,
                "findings": [], "unknown_why": "no device record for its GPU",
            },
            {
                "name": "rmsnorm_kernel", "mangled": "rmsnorm_kernel", "grid": [1, 1, 1],
                "block": [256, 1, 1], "compute_capability": [9, 0], "sm_count": 132, "calls": 1,
                "total_ns": 500, "gpu_time_pct": 6.25, "blocks": 1, "threads_per_block": 256,
                "registers_per_thread": 40, "shared_memory_bytes": 1024, "shared_memory_bytes_min": 1024,
                "blocks_per_sm": 6, "limited_by": ["registers"], "theoretical_occupancy_pct": 75.0,
                "achieved_occupancy_pct": null, "blocks_per_wave": 792, "waves": 0.0013,
                "sms_busy_pct": 0.76, "wave_efficiency_pct": 0.13,
                "findings": ["1 block on 132 SMs: 0.8% of SMs busy"], "unknown_why": null,
            },
        ],
    });
    assert_eq!(v, expected);
}

#[test]
fn report_top_limits_the_kernel_table() {
    let (dir, _) = session("report-top");
    let out = run(&["report", dir.path().to_str().unwrap(), "--top", "1"]);
    let t = text(&out.stdout);
    assert!(
        t.contains("  ... 1 more kernels (--top 0 shows all)\n"),
        "{t}"
    );
    assert!(!t.contains("rmsnorm_kernel\n"), "{t}");
    let out = run(&[
        "report",
        dir.path().to_str().unwrap(),
        "--top",
        "1",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kernels"].as_array().unwrap().len(), 1);
}

#[test]
fn an_unsealed_part_is_reported_as_lost_then_exits_3() {
    let (dir, _) = session("report-unsealed");
    // The collector was killed while sealing the last part (pid 4242's last kernel,
    // the drop count and its End).
    let unsealed = dir.join(".unsealed-00000004");
    std::fs::rename(dir.join("parts/00000004"), &unsealed).unwrap();
    std::fs::remove_file(unsealed.join("manifest.json")).unwrap();
    let bytes: u64 = std::fs::read_dir(&unsealed)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let p = dir.path().display();
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: warning: {p}: .unsealed-00000004 was never sealed (the collector stopped while writing it); its records are not in the report\n\
             gpuprof: error: {p}: 1 part was never sealed; the report covers the 3 sealed parts\n"
        )
    );
    let t = text(&out.stdout);
    assert!(
        t.contains("Kernels by GPU time (4 kernels, 7.000 µs)\n"),
        "{t}"
    );
    assert!(
        t.contains("Processes whose stream did not finish: 4242, 4243\n  (they or the collector"),
        "{t}"
    );
    assert!(t.contains("  cupti              0\n"), "{t}");
    assert!(
        t.ends_with(&format!(
            "\nSession damage\n  .unsealed-00000004 ({bytes} bytes) was never sealed: the collector stopped while writing it; its records are lost\n"
        )),
        "{t}"
    );
    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["session_damage"],
        serde_json::json!({
            "damaged_files": 0,
            "damaged_records": 0,
            "lost": [],
            "damaged_files_of_unknown_records": 0,
            "damaged_bytes": 0,
            "damaged": [],
            "unsealed": [{"dir": ".unsealed-00000004", "bytes": bytes}],
        })
    );
}

/// The report of the session without its second frame (pid 4242's NVTX ranges,
/// launches, three kernels, the copy and the set), then the damage.
const TABLE_WITHOUT_FRAME_1: &str = "\
Processes
  pid 4242: ./llm --steps 2
    host node1; CUPTI API 130401 (record layouts 13.4) from /opt/cuda/libcupti.so.13
    device 0: NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)
    1 kernels, 1.000 µs GPU time; stream complete
  pid 4243: (no process record)
    1 kernels, 1.500 µs GPU time; stream did not finish

Kernels by GPU time (2 kernels, 2.500 µs)
  time %  total µs  calls  mean µs  median µs  min µs  max µs  stddev µs  grid    block    name
   60.00     1.500      1    1.500      1.500   1.500   1.500      0.000  1x1x1   256x1x1  rmsnorm_kernel
   40.00     1.000      1    1.000      1.000   1.000   1.000      0.000  64x1x1  256x1x1  gemm

Roofline
  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; see GPUPROF_GEMM and GPUPROF_COUNTERS)

Launch shape by kernel config (theoretical, from each launch's grid and block)
  time %  grid    block    regs  smem KiB  blk/SM  held by  occ %  ach %  waves  SMs %  name
   60.00  1x1x1   256x1x1    40       1.0       -  -            -      -      -      -  rmsnorm_kernel
          └ no occupancy: no device record for its GPU
   40.00  64x1x1  256x1x1    40       1.0       6  regs      75.0      -   0.08   48.5  gemm
          └ 64 blocks on 132 SMs: 48.5% of SMs busy
  blk/SM: blocks an SM holds at once, held by registers, shared memory, warps or the block limit; occ %: theoretical
    occupancy (resident warps over the SM's most); ach %: achieved occupancy (counter mean); waves: blocks over blocks
    the GPU holds at once; SMs %: SMs given a block in the first wave (rules: gpuprof report --help)

Memory copies and sets
  (none)

NVTX ranges
  (none)

Dropped records
  source       records
  cupti              2
  channel            0
  ring               0
  undelivered        0
  unwritten          0
  unsaved            0

Processes whose stream did not finish: 4243
  (they or the collector stopped first: what they did not deliver is in the
   undelivered and unwritten rows above when the collector saw them stop;
   when the collector itself stopped, records it had not sealed are lost, uncounted)

Session damage
  1 damaged file skipped (0 records, BYTES bytes): the tables above leave them out
  file                          records  bytes  reason
";

#[test]
fn a_damaged_part_is_skipped_the_rest_reported_and_the_damage_stated() {
    let (dir, _) = session("report-damaged");
    // One bit of the second part's manifest: the whole part is skipped.
    let manifest = dir.join("parts/00000002/manifest.json");
    let m = std::fs::read(&manifest).unwrap();
    flip(&manifest, 30);
    let lost: u64 = std::fs::read_dir(dir.join("parts/00000002"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let json =
        String::from_utf8_lossy(&m[..m.iter().position(|b| *b == b'\n').unwrap()]).into_owned();
    let stored = String::from_utf8_lossy(&m).lines().nth(1).unwrap()[7..].to_string();
    let mut flipped = json.clone().into_bytes();
    flipped[30] ^= 0x10;
    let reason = format!(
        "checksum mismatch (stored {stored}, computed {:08x}); the whole part is skipped",
        crc32c(&flipped)
    );
    let file = "parts/00000002/manifest.json";
    let p = dir.path().display();
    // The part's records, as the session's index gives them.
    let stderr = format!(
        "gpuprof: warning: {p}: {file} is damaged ({reason}); its 12 records are left out of the report\n\
         gpuprof: error: {p}: 1 damaged file (12 records, {lost} bytes) skipped; the report covers the rest of the 4 parts\n"
    );

    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stderr), stderr);
    let width = lost.to_string().len().max(5);
    assert_eq!(
        text(&out.stdout),
        format!(
            "{}  {file}       12  {lost:>width$}  {reason}\n",
            TABLE_WITHOUT_FRAME_1
                .replace("BYTES", &lost.to_string())
                .replace("(0 records,", "(12 records,")
        )
    );

    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stderr), stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["kernel_count"].as_u64(), v["kernel_ns"].as_u64()),
        (Some(2), Some(2500))
    );
    assert_eq!(
        v["session_damage"],
        serde_json::json!({
            "damaged_files": 1,
            "damaged_records": 12,
            "lost": [],
            "damaged_files_of_unknown_records": 0,
            "damaged_bytes": lost,
            "damaged": [{"file": file, "bytes": lost, "records": 12, "reason": reason}],
            "unsealed": [],
        })
    );
    assert!(v.get("impossible_records").is_none());

    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stdout).ends_with(&format!(
            "\n# unfinished\npid\n4243\n\n# session_damage\nkind,file,records,bytes,reason\n\
             damaged,{file},12,{lost},\"{reason}\"\n"
        )),
        "{}",
        text(&out.stdout)
    );

    // trace and roofline write their output and exit 3 too.
    let trace = dir.join("t.json");
    let out = run(&[
        "trace",
        dir.path().to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert_eq!(v["traceEvents"].as_array().unwrap().len(), 6);
    let kernels = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .count();
    assert_eq!(kernels, 2);
    let (warning, error) = stderr.split_once('\n').unwrap();
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}\ngpuprof: trace written to {}: 2 kernels, 0 copies, 0 sets, 0 launch calls, \
             0 NVTX ranges, 0 flows from launch to kernel; open it in ui.perfetto.dev or \
             chrome://tracing\n{}",
            warning.replace("out of the report", "out of the trace"),
            trace.display(),
            error.replace("the report covers", "the trace covers")
        )
    );
}

#[test]
fn a_damaged_table_file_costs_its_records_only() {
    let (dir, _) = session("report-bad-file");
    // The kernels of the second part: three kernels; its launches, ranges, copy and
    // set are still read.
    let file = dir.join("parts/00000002/kernels.parquet");
    let bytes = std::fs::metadata(&file).unwrap().len();
    flip(&file, 10);
    let out = run(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kernel_count"], 2);
    assert_eq!(v["transfers"].as_array().unwrap().len(), 2);
    let d = &v["session_damage"]["damaged"][0];
    assert_eq!(d["file"], "parts/00000002/kernels.parquet");
    assert_eq!(
        (d["records"].as_u64(), d["bytes"].as_u64()),
        (Some(3), Some(bytes))
    );
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .starts_with("checksum mismatch (manifest "),
        "{d}"
    );
}

#[test]
fn an_old_session_or_a_newer_part_is_an_error_and_no_output() {
    let (dir, _) = session("report-versions");
    // A part a newer gpuprof wrote, intact: version 5.
    let manifest = dir.join("parts/00000003/manifest.json");
    let text0 = std::fs::read_to_string(&manifest).unwrap();
    let json = text0
        .lines()
        .next()
        .unwrap()
        .replace("\"version\":4", "\"version\":5");
    std::fs::write(
        &manifest,
        format!("{json}\ncrc32c {:08x}\n", crc32c(json.as_bytes())),
    )
    .unwrap();
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: {}: session version 5, newer than this gpuprof reads (4); use a newer gpuprof\n",
            manifest.display()
        )
    );
    // A session of the single-file format (2).
    let old = Scratch::new("report-old-format");
    let mut header = b"GPUPROFS".to_vec();
    header.extend(2u32.to_le_bytes());
    header.extend(4u32.to_le_bytes());
    header.extend([0u8; 4]);
    std::fs::write(old.join("session.gpuprof"), &header).unwrap();
    let out = run(&["report", old.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: {} is a session of format 2 (a single session.gpuprof file, gpuprof \
             before the columnar session); this gpuprof reads format 3 and later (a directory of Parquet \
             parts): record the run again\n",
            old.join("session.gpuprof").display()
        )
    );
}

#[test]
fn files_that_are_not_sessions() {
    let dir = Scratch::new("report-not-sessions");
    let p = dir.join("x.gpuprof");
    std::fs::write(&p, b"not a gpuprof session file").unwrap();
    let out = run(&["report", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: {}: not a gpuprof session (a session is the directory `gpuprof record` writes)\n",
            p.display()
        )
    );
    assert_eq!(text(&out.stdout), "");

    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: {}: no session here (no parts/ directory)\n",
            dir.path().display()
        )
    );

    let missing = dir.join("missing");
    let out = run(&["report", missing.to_str().unwrap()]);
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );

    let out = run(&["report", p.to_str().unwrap(), "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("invalid value 'xml' for '--format <FORMAT>'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn empty_session_reports_zeros() {
    let dir = Scratch::new("report-empty");
    write_session(dir.path(), &[]);
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "Processes\n  (none: the session holds no records)\n\nKernels by GPU time (0 kernels, 0.000 µs)\n  (none)\n\n\
         Memory copies and sets\n  (none)\n\nNVTX ranges\n  (none)\n\nDropped records\n  source       records\n  \
         cupti              0\n  channel            0\n  ring               0\n  undelivered        0\n  unwritten          0\n  unsaved            0\n"
    );
}

#[test]
fn trace_reads_back_with_events_tracks_and_flows() {
    let (dir, _) = session("trace");
    let out_file = dir.join("t.json");
    let out = run(&[
        "trace",
        dir.path().to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let count = |ph: &str, cat: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && (cat.is_empty() || e["cat"] == cat))
            .count()
    };
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: trace written to {}: 5 kernels, 1 copy, 1 set, 3 launch calls, 2 NVTX ranges, \
             3 flows from launch to kernel; open it in ui.perfetto.dev or chrome://tracing\n",
            out_file.display(),
        )
    );
    assert_eq!(count("X", "kernel"), 5);
    assert_eq!(count("X", "memcpy"), 1);
    assert_eq!(count("X", "memset"), 1);
    assert_eq!(count("X", "cuda_api"), 3);
    assert_eq!(count("X", "nvtx"), 1);
    assert_eq!((count("b", "nvtx"), count("e", "nvtx")), (1, 1));
    // Metadata: two processes; pid 4242 has thread 31 and stream 7, pid 4243 stream 7.
    assert_eq!(count("M", ""), 2 + 2 + 1);
    // Flows: one per kernel whose launch was seen (correlation 10, 11, 12), each an
    // s on the launching thread before an f on the kernel's stream, same id.
    let mut pairs = Vec::new();
    for s in events.iter().filter(|e| e["ph"] == "s") {
        let f = events
            .iter()
            .find(|e| e["ph"] == "f" && e["id"] == s["id"])
            .expect("f for every s");
        assert!(s["ts"].as_f64() < f["ts"].as_f64());
        assert_eq!(
            (s["pid"].as_u64(), s["tid"].as_u64(), f["tid"].as_u64()),
            (Some(4242), Some(1), Some(2))
        );
        let kernel = events
            .iter()
            .find(|e| {
                e["cat"] == "kernel"
                    && e["pid"] == f["pid"]
                    && e["ts"].as_f64() <= f["ts"].as_f64()
                    && e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()
                        >= f["ts"].as_f64().unwrap()
            })
            .unwrap();
        pairs.push(kernel["args"]["correlation_id"].as_u64().unwrap());
    }
    assert_eq!(pairs, [10, 11, 12]);
    // Times are µs from the session's first timestamp (the memset at T0 + 100).
    let first = events.iter().find(|e| e["cat"] == "kernel").unwrap();
    assert_eq!(
        (first["ts"].as_f64(), first["dur"].as_f64()),
        (Some(1.9), Some(3.0))
    );
    assert_eq!(first["name"], "gemm(float*, float*, int)");
    assert_eq!(first["args"]["grid"], serde_json::json!([64, 1, 1]));
    assert_eq!(first["args"]["registers_per_thread"], 40);
}

#[test]
fn trace_defaults_to_a_perfetto_trace_beside_the_session() {
    let (dir, _) = session("trace-default");
    let out = run(&["trace", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("trace.perfetto-trace").is_file());
    assert!(!dir.join("trace.json").exists());
    let out = run(&["trace", dir.path().to_str().unwrap(), "--format", "chrome"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("trace.json").is_file());
}

fn crc32c(b: &[u8]) -> u32 {
    // CRC-32C (Castagnoli), bit by bit: the manifests' checksum, computed here
    // independently of the writer.
    let mut crc = !0u32;
    for &byte in b {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A run at the limits of what a line holds: kernels of an hour each, grids and
/// blocks at CUDA's largest, names alike but for one character in their middle, a
/// kernel launched with many configurations. Every line of the default report fits
/// 120 columns (characters), the names stay distinct, and what was left out to fit
/// is named.
#[test]
fn every_line_fits_120_columns_whatever_the_run() {
    const HOUR: u64 = 3_600_000_000_000;
    let mut records = vec![frames()[0].1[1].clone()];
    let mut corr = 1;
    for i in 0..12u32 {
        let name = format!(
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x{i}x64_warpgroupsize1x1x1_\
             execute_segment_k_off_kernel__5x_cublas"
        );
        records.push(s(10 + i, &name));
        for c in 0..3 + i {
            let start = T0 + u64::from(corr) * 2 * HOUR;
            records.push(Record::Kernel(Kernel {
                grid: [i32::MAX - c as i32, 65_535, 65_535],
                block: [1024, 1, 1],
                registers_per_thread: 255,
                dynamic_shared_memory: 232_448,
                ..testing::kernel(10 + i, corr, start, start + HOUR + u64::from(c))
            }));
            corr += 1;
        }
    }
    let dir = Scratch::new("report-wide");
    write_session(dir.path(), &[(4242, records)]);
    let out = run(&["report", dir.path().to_str().unwrap(), "--top", "0"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    for line in report.lines() {
        assert!(
            line.chars().count() <= 120,
            "{} columns: {line}\n{report}",
            line.chars().count()
        );
    }
    // Twelve kernels, twelve distinct names in each table that names them.
    let names = |title: &str| -> Vec<String> {
        let section = report.split(title).nth(1).unwrap();
        section
            .lines()
            .skip(2)
            .take_while(|l| !l.is_empty() && !l.starts_with("  ("))
            .filter(|l| !l.trim_end().ends_with('└') && !l.trim_start().starts_with('└'))
            .filter_map(|l| l.split("  ").last().map(str::to_string))
            .collect()
    };
    let kernels = names("\nKernels by GPU time");
    assert_eq!(kernels.len(), 12, "{report}");
    let distinct: std::collections::BTreeSet<&String> = kernels.iter().collect();
    assert_eq!(distinct.len(), 12, "{kernels:?}");
    assert!(
        report.contains("left out to fit 120 columns: --format csv or json has them)"),
        "{report}"
    );
}

/// `--what-if`: a bad value is refused with what is expected and exit 2, nothing
/// written; a session without GEMM shapes says so in the table and gives empty rows
/// in JSON and CSV.
#[test]
fn what_if_values_are_checked_and_a_session_without_gemms_says_so() {
    let (dir, _) = session("report-what-if");
    let path = dir.path().to_str().unwrap();
    for (bad, says) in [
        (
            "batch=8",
            "expected tokens=N,N,... (e.g. tokens=1,8,64) or tp=N,N,... (e.g. tp=1,2,8)",
        ),
        (
            "tp=0",
            "a tensor-parallel degree is a whole number from 1 to 1024",
        ),
        (
            "tokens=0",
            "a token count is a whole number from 1 to 2147483648",
        ),
        (
            "tokens=1,x",
            "a token count is a whole number from 1 to 2147483648",
        ),
    ] {
        let out = run(&["report", path, "--what-if", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains(says),
            "{bad}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "");
    }
    let out = run(&["report", path, "--what-if", "tokens=1,64"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(
        "\nWhat-if by GEMM shape (the roofline's time per call at other tokens and TP degrees: \
         a model, each matrix moved once)\n  (no GEMM shapes in this session)\n"
    ));
    let as_format = |format: &str| {
        run(&[
            "report",
            path,
            "--what-if",
            "tokens=1,64",
            "--format",
            format,
        ])
    };
    let out = as_format("json");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["what_if"], serde_json::json!({"rows": [], "skipped": []}));
    let out = as_format("csv");
    assert!(text(&out.stdout).ends_with(
        "\n# what_if\nshape,gpu,role,tp_as_run,tp,m,k,batch,tokens_as_run,tokens,flops,bytes,\
         intensity,bound,roofline_ns,ns_per_token,mfu_pct,measured_ns\n"
    ));
}

/// `--top N` in the table: a kernel's first N configurations (most calls first), the
/// others summed in one row whose median and standard deviation are not known.
#[test]
fn the_table_shows_the_first_top_configurations_and_sums_the_rest() {
    let dir = Scratch::new("report-top-configs");
    let config = |corr: u32, grid: i32, ns: u64| {
        let start = T0 + u64::from(corr) * 10_000;
        Record::Kernel(Kernel {
            grid: [grid, 1, 1],
            ..testing::kernel(1, corr, start, start + ns)
        })
    };
    // Grid 8: 3 calls; grid 4: 2 calls of 1 and 3 µs; grid 2: 1 call of 6 µs.
    let records = vec![
        s(1, "gemm"),
        config(1, 8, 1000),
        config(2, 8, 1000),
        config(3, 8, 1000),
        config(4, 4, 1000),
        config(5, 4, 3000),
        config(6, 2, 6000),
    ];
    write_session(dir.path(), &[(4242, records)]);
    let table = |top: &str| {
        let out = run(&["report", dir.path().to_str().unwrap(), "--top", top]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let t = text(&out.stdout);
        let from = t.find("Kernels by GPU time").unwrap();
        let to = t[from..].find("\n\n").unwrap() + from;
        t[from..to + 1].to_string()
    };
    assert_eq!(
        table("1"),
        "\
Kernels by GPU time (6 kernels, 13.000 µs)
  time %  total µs  calls  mean µs  median µs  min µs  max µs  stddev µs  grid   block    name
  100.00    13.000      6    2.167      1.000   1.000   6.000      2.041  3      configs  gemm
   23.08     3.000      3    1.000      1.000   1.000   1.000      0.000  8x1x1  128x1x1  └
   76.92    10.000      3    3.333          -   1.000   6.000          -  +2     configs  └ the rest
  +N configs: a kernel's other configurations in one row (--top 0 lists each)
"
    );
    // With room for every configuration, each is a row of its own.
    for top in ["3", "0"] {
        let t = table(top);
        assert!(!t.contains("the rest"), "--top {top}:\n{t}");
        assert!(t.contains("  2x1x1  128x1x1  └\n"), "--top {top}:\n{t}");
    }
}
