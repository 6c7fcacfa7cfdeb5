//! `gpuprof report DIR...`: the sessions of several ranks (or hosts) reported together,
//! processes kept apart by session even when their pids repeat, kernels merged, a
//! roofline row per session; quoted patterns expanded by gpuprof.

use std::path::Path;

use gpuprof_collector::store::write_parts;
use gpuprof_tests::{gpuprof_command, Scratch};
use serde_json::{json, Value};
use wire::testing::{self, gemm, string as s};
use wire::{End, ProcessInfo, Record};

/// One rank: process `pid` on `host`, one H100; per step a 512 x 512 x 512 BF16 GEMM
/// kernel of 2 µs and a norm kernel of 500 ns.
fn rank(dir: &Path, pid: u32, host: &str, steps: u32) {
    let mut records = vec![
        Record::Process(Box::new(ProcessInfo {
            pid,
            ppid: 1,
            command: vec!["./serve".into(), "--rank".into(), host.into()],
            host: host.into(),
            start_ns: 1,
            profiler_version: "0.1.0".into(),
            cupti_api_version: 130401,
            cupti_layouts: "13.4".into(),
            cupti_path: "/opt/cuda/libcupti.so.13".into(),
            environment: Vec::new(),
        })),
        Record::Device(testing::device(
            "NVIDIA H100 80GB HBM3",
            (9, 0),
            132,
            1_980_000,
        )),
        s(1, "gemm_kernel"),
        s(2, "rms_norm"),
    ];
    for step in 0..steps {
        let t = 10_000 + step as u64 * 10_000;
        let (g, n) = (2 * step + 1, 2 * step + 2);
        records.push(testing::launch(g, 7, t, t + 10));
        records.push(gemm(g, step as u64 + 1, 0, 512, 512, 512));
        records.push(testing::launch(n, 7, t + 20, t + 30));
        records.push(testing::k(1, g, t + 100, t + 2_100));
        records.push(testing::k(2, n, t + 2_100, t + 2_600));
    }
    records.push(Record::End(End { records: 0 }));
    std::fs::create_dir_all(dir).unwrap();
    write_parts(dir, &[(pid, records)]).unwrap();
}

fn report(args: &[&Path]) -> (Option<i32>, Value, String) {
    let out = gpuprof_command()
        .arg("report")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, stderr)
}

#[test]
fn ranks_are_reported_together_and_kept_apart() {
    let scratch = Scratch::new("report-sessions");
    let (a, b) = (scratch.join("rank0"), scratch.join("rank1"));
    // Both ranks run as pid 100 on their own host: the same pid, two processes.
    rank(&a, 100, "node-a", 3);
    rank(&b, 100, "node-b", 5);
    let (code, v, stderr) = report(&[&a, &b]);
    assert_eq!(code, Some(0), "{stderr}");
    let (an, bn) = (a.display().to_string(), b.display().to_string());
    assert_eq!(
        v["sessions"],
        json!([
            {"session": 1, "dir": an, "processes": 1, "kernels": 6, "kernel_ns": 3 * 2_500},
            {"session": 2, "dir": bn, "processes": 1, "kernels": 10, "kernel_ns": 5 * 2_500},
        ])
    );
    let procs: Vec<(u64, u64, &str, u64)> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["session"].as_u64().unwrap(),
                p["pid"].as_u64().unwrap(),
                p["host"].as_str().unwrap(),
                p["kernels"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(procs, vec![(1, 100, "node-a", 6), (2, 100, "node-b", 10)]);
    assert_eq!(v["kernel_count"], 16);
    assert_eq!(v["kernel_ns"], 8 * (2_000 + 500));
    let kernels: Vec<(&str, u64, u64)> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap(),
                k["calls"].as_u64().unwrap(),
                k["total_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kernels,
        vec![("gemm_kernel", 8, 16_000), ("rms_norm", 8, 4_000)]
    );
    // The run of each session: its launches, time and the GEMMs' model FLOPs.
    let flops = 2.0 * 512f64.powi(3);
    let ranks: Vec<(&str, u64, u64, f64)> = v["roofline"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["launches"].as_u64().unwrap(),
                r["gpu_ns"].as_u64().unwrap(),
                r["model_flops"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ranks,
        vec![
            (an.as_str(), 6, 3 * 2_500, 3.0 * flops),
            (bn.as_str(), 10, 5 * 2_500, 5.0 * flops)
        ]
    );
    assert_eq!(v["roofline"]["run"]["model_flops"], json!(8.0 * flops));

    // One session alone: no session list, no per-session rows.
    let (code, one, _) = report(&[&a]);
    assert_eq!(code, Some(0));
    assert_eq!(one["sessions"], Value::Null);
    assert_eq!(one["roofline"]["sessions"], Value::Null);
    assert_eq!(one["processes"][0].get("session"), None);
    assert_eq!(one["kernel_count"], 6);

    // A quoted pattern is expanded by gpuprof, in name order, each directory once.
    let pattern = scratch.join("rank*");
    let (code, globbed, _) = report(&[&pattern, &a]);
    assert_eq!(code, Some(0));
    assert_eq!(globbed, v);

    // A pattern that matches nothing is an error naming it, with no output.
    let none = scratch.join("nothing*");
    let (code, out, stderr) = report(&[&none]);
    assert_eq!((code, out), (Some(2), Value::Null));
    assert_eq!(
        stderr,
        format!(
            "gpuprof: error: no session directory matches {:?}\n",
            none.display().to_string()
        )
    );

    // The table names the sessions and each process's session.
    let out = gpuprof_command()
        .arg("report")
        .args([&a, &b])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.starts_with(&format!(
            "Sessions\n  session  processes  kernels  GPU µs  directory\n        1          1        6   7.500  {an}\n        2          1       10  12.500  {bn}\n\nProcesses\n  pid 100 (session 1): ./serve --rank node-a\n"
        )),
        "{table}"
    );
    assert!(table.contains("\nRoofline by session\n"), "{table}");

    // CSV: the sessions first, then each process with its session.
    let out = gpuprof_command()
        .arg("report")
        .args([&a, &b])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.starts_with(&format!(
            "# sessions\nsession,dir,processes,kernels,kernel_ns\n1,{an},1,6,7500\n2,{bn},1,10,12500\n\n# processes\n"
        )),
        "{csv}"
    );
    let header = csv.lines().nth(6).unwrap();
    assert!(header.ends_with(",session"), "{header}");
    assert!(csv.lines().nth(8).unwrap().ends_with(",2"), "{csv}");
}

/// `report --help` says what every mark on a roofline or fitted value means (`~`,
/// `!`, `≥ ≤`, `±`), and fits a 100-column terminal.
#[test]
fn report_help_explains_every_mark_and_fits_the_terminal() {
    let o = gpuprof_command()
        .args(["report", "--help"])
        .output()
        .expect("gpuprof runs");
    assert_eq!(o.status.code(), Some(0));
    let help = String::from_utf8(o.stdout).expect("UTF-8");
    for line in [
        "Marks on DRAM bytes, AI, MFU, HFU and MBU (the roofline) and on fitted values:",
        "  ~       fitted to PM sampling windows",
        "  !       over 100% of the peak: the peak is too low for those kernels",
        "  ≥ ≤     the windows determined a class's DRAM reads and not its writes",
        "  ± x     in \"Counter samples fitted by kernel class\": 2 standard errors",
    ] {
        assert!(help.lines().any(|l| l.starts_with(line)), "{line}\n{help}");
    }
    let widest = help.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 100, "{widest} columns:\n{help}");
}
