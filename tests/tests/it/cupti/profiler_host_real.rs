//! The counter configs gpuprof builds, against NVIDIA's REAL CUPTI Profiler Host API,
//! offline. CUPTI 12.6, 12.8, 12.9, 13.0 and 13.1 run their host API without a CUDA
//! driver (13.2 crashes in `cuptiProfilerHostInitialize`, 13.3+ answer
//! `CUPTI_ERROR_UNKNOWN`: they need a driver, and gpuprof does not call them without
//! one).
//!
//! The production path is what runs: `gpuprof metrics --cupti LIB` plans in a child
//! process with `cupti::plan::plan`, the function `libgpuprof.so` calls at the first
//! context of a device (`inject/src/counters.rs`, `counters/sampling.rs`), through
//! `cupti::profiler::HostConfig` on the real library. Beside it, a C program compiled
//! against each release's own headers asks the library the facts the code relies on
//! (`tests/c/profiler_host_facts.c`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use cupti::metrics::{default_groups, Host};
use gpuprof_tests::{compile_c, gpuprof_command, manifest_release, NvidiaRelease};
use serde_json::Value;

/// Releases whose Profiler Host API works without a driver.
const OFFLINE: [&str; 5] = ["12.6", "12.8", "12.9", "13.0", "13.1"];
/// The chips with a default metric set.
const CHIPS: [&str; 4] = ["GA100", "AD102", "GH100", "GB100"];

/// `gpuprof metrics --cupti <release's libcupti> --format json ARGS`: the plan, or
/// the error line.
fn plan(release: &str, args: &[&str]) -> Result<Value, String> {
    let r = manifest_release(release);
    let out = gpuprof_command()
        .arg("metrics")
        .arg("--cupti")
        .arg(&r.libcupti)
        .args(["--format", "json"])
        .args(args)
        .output()
        .expect("run gpuprof metrics");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "bad JSON from gpuprof metrics: {e}\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
        }))
    } else {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn passes(plan: &Value) -> Vec<u64> {
    plan["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["passes"].as_u64().expect("passes"))
        .collect()
}

fn metrics(plan: &Value, group: usize) -> Vec<String> {
    plan["groups"][group]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m.as_str().expect("name").to_string())
        .collect()
}

/// 12.6 predates GB100: its host API refuses the chip.
fn knows(release: &str, chip: &str) -> bool {
    !(release == "12.6" && chip == "GB100")
}

/// Every default range-profiler group of every chip is exactly one pass on every
/// offline release, with all of a group's metrics in one AddMetrics call (one call
/// per metric made 9 passes of GH100's group 0).
#[test]
fn every_default_group_is_one_pass_on_the_real_host_api() {
    for release in OFFLINE {
        for chip in CHIPS {
            let got = plan(release, &["--chip", chip]);
            if !knows(release, chip) {
                let e = got.unwrap_err();
                assert!(
                    e.starts_with(&format!(
                        "gpuprof: error: cuptiProfilerHostInitialize failed: \
                         CUPTI_ERROR_INVALID_PARAMETER (1) (chip {chip}): this CUPTI does not \
                         know {chip} (it knows "
                    )) && e.contains("GH100"),
                    "{release} {chip}: {e}"
                );
                continue;
            }
            let p = got.unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
            let groups = default_groups(chip).expect("default set");
            assert_eq!(passes(&p), vec![1; groups.len()], "{release} {chip}");
            for (i, g) in groups.iter().enumerate() {
                assert_eq!(metrics(&p, i), *g, "{release} {chip} group {i}");
            }
            assert_eq!(p["total_passes"], groups.len(), "{release} {chip}");
            assert_eq!(p["mode"], "kernel");
            assert_eq!(
                p["library"],
                manifest_release(release).libcupti.display().to_string()
            );
        }
    }
}

/// Kernel replay puts the union of a chip's groups in one config: its passes are
/// what NVIDIA's host metrics library of the same release says for that set in one
/// go (GA100 5, AD102 6, GH100 5, GB100 6; one AddMetrics call per metric made 24 on
/// GH100).
#[test]
fn kernel_replay_union_passes_equal_the_host_library() {
    let want = [("GA100", 5), ("AD102", 6), ("GH100", 5), ("GB100", 6)];
    for release in OFFLINE {
        let r = manifest_release(release);
        let host = Host::open(&r.libnvperf_host).unwrap_or_else(|e| panic!("{e}"));
        for (chip, n) in want {
            if !knows(release, chip) {
                continue;
            }
            let p = plan(release, &["--chip", chip, "--replay", "kernel"])
                .unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
            let union = metrics(&p, 0);
            let names: Vec<&str> = union.iter().map(String::as_str).collect();
            let nvperf = host.num_passes(chip, &names).expect("num_passes");
            assert_eq!(passes(&p), vec![nvperf as u64], "{release} {chip}");
            assert_eq!(nvperf, n, "{release} {chip}");
            assert_eq!(p["mode"], "kernel-replay");
            let mut expect: Vec<&str> = Vec::new();
            for m in default_groups(chip).unwrap().iter().flat_map(|g| g.iter()) {
                if !expect.contains(m) {
                    expect.push(m);
                }
            }
            assert_eq!(names, expect, "{release} {chip}");
        }
    }
}

/// The PM sampling set is accepted for `CUPTI_PROFILER_TYPE_PM_SAMPLING` on every
/// chip, in one pass: DRAM bytes from 12.9 on, DRAM throughput before (12.6 and
/// 12.8 refuse DRAM bytes for PM sampling).
#[test]
fn pm_sampling_set_is_accepted_by_the_real_host_api() {
    let rest = [
        "sm__cycles_active.avg",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "gpu__time_duration.sum",
    ];
    for release in OFFLINE {
        let old = matches!(release, "12.6" | "12.8");
        for chip in CHIPS {
            if !knows(release, chip) {
                continue;
            }
            let p = plan(release, &["--chip", chip, "--sampling"])
                .unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
            assert_eq!(passes(&p), vec![1], "{release} {chip}");
            let dram: &[&str] = if old {
                &["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
            } else {
                &["dram__bytes_read.sum", "dram__bytes_write.sum"]
            };
            let want: Vec<&str> = dram.iter().chain(rest.iter()).copied().collect();
            assert_eq!(metrics(&p, 0), want, "{release} {chip}");
            let refused: Vec<&str> = p["refused"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
                .unwrap_or_default();
            let want_refused: &[&str] = if old {
                &["dram__bytes_read.sum", "dram__bytes_write.sum"]
            } else {
                &[]
            };
            assert_eq!(refused, want_refused, "{release} {chip}");
            assert_eq!(p["mode"], "sampling");
        }
    }
}

/// Range-profiler group 0 (tensor ops, L2 lookups) cannot be PM-sampled: the real
/// host API refuses it, and gpuprof names the first metric refused.
#[test]
fn range_profiler_group_0_is_refused_for_pm_sampling() {
    let group0 = default_groups("GH100").unwrap()[0].join(",");
    for release in ["12.9", "13.1"] {
        let e = plan(
            release,
            &["--chip", "GH100", "--sampling", "--metrics", &group0],
        )
        .unwrap_err();
        let first = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
        assert_eq!(
            e,
            format!(
                "gpuprof: error: CUPTI does not accept metric {first} on GH100 for PM \
                 sampling: cuptiProfilerHostConfigAddMetrics failed: \
                 CUPTI_ERROR_INVALID_PARAMETER (1)"
            ),
            "{release}"
        );
    }
}

/// A user's metric list is one group, as with `GPUPROF_METRICS`: a list that needs
/// more than one pass is refused before a run, naming the passes.
#[test]
fn user_metrics_needing_two_passes_are_refused() {
    let e = plan(
        "13.1",
        &[
            "--chip",
            "GH100",
            "--metrics",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "gpuprof: error: metric group 0 (sm__throughput.avg.pct_of_peak_sustained_elapsed) \
         needs 8 passes on GH100; each group must fit in one pass"
    );
}

/// CUPTI 13.2 crashes in the Host API without a driver, and 13.3 to 13.5 answer only
/// `CUPTI_ERROR_UNKNOWN`: gpuprof does not call them without one, says what they need
/// and exits 2.
#[test]
fn a_library_that_needs_a_driver_is_not_called_offline() {
    for release in ["13.2", "13.3", "13.4", "13.5"] {
        let r = manifest_release(release);
        let e = plan(release, &["--chip", "GH100"]).unwrap_err();
        let want = format!(
            "gpuprof: error: {}: CUPTI 13.2 and later need a CUDA driver for their Profiler \
             Host API, and this machine has none (cannot load libcuda.so.1",
            r.libcupti.display()
        );
        assert!(e.starts_with(&want), "{release}: {e}");
        assert!(
            e.ends_with(
                "plan with a CUPTI 12.6 to 13.1 offline, or run this where the driver is \
                 installed"
            ),
            "{release}: {e}"
        );
    }
}

/// `tests/c/profiler_host_facts.c` built against `r`'s headers.
fn facts_program(r: &NvidiaRelease) -> PathBuf {
    let mut args: Vec<String> = vec!["-x".into(), "c++".into()];
    for inc in &r.include_dirs {
        args.push(format!("-I{}", inc.display()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    compile_c(
        "profiler_host_facts.c",
        &format!("facts/profiler_host_facts-{}", r.release.replace('.', "_")),
        &args,
    )
}

/// The facts, asked with NVIDIA's own structs and macros of each offline release.
#[test]
fn host_api_facts_on_every_offline_release() {
    for release in OFFLINE {
        let r = manifest_release(release);
        let exe = facts_program(r);
        let out = Command::new(&exe)
            .arg(&r.libcupti)
            .env("LD_LIBRARY_PATH", &r.lib_dir)
            .output()
            .expect("run profiler_host_facts");
        assert!(out.status.success(), "{release}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text,
            // Host Initialize is 48 bytes in 12.6-13.1; the 13.2 struct (56, with
            // pSinglePassMetricSetName) is refused with CUPTI_ERROR_INVALID_PARAMETER.
            // Each AddMetrics call is its own pass group. A refused metric (unknown, or
            // not allowed for PM sampling) is CUPTI_ERROR_INVALID_PARAMETER.
            "init_size 48\ninit_larger 1\ninit_own 0\npasses_separate 3\n\
             passes_one_call 1\nrefused_unknown 1\nrefused_pm_tensor 1\n",
            "{release}"
        );
    }
}

/// `gpuprof metrics --cupti LIB --format json ARGS --in-child` (the planning child
/// itself, one process) with `env`: the plan, or the error line with `lib` as "LIB".
fn plan_in_child(lib: &Path, env: &[(&str, &OsStr)], args: &[&str]) -> Result<Value, String> {
    let mut cmd = gpuprof_command();
    cmd.arg("metrics")
        .arg("--cupti")
        .arg(lib)
        .args(["--format", "json"])
        .args(args)
        .arg("--in-child");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gpuprof metrics");
    if out.status.success() {
        let mut plan: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        plan["library"] = Value::Null;
        Ok(plan)
    } else {
        Err(String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace(&lib.display().to_string(), "LIB"))
    }
}

/// The production planner's answer for `args` through NVIDIA's library of `release`
/// and through the simulated CUPTI impersonating it: the same plan (passes, groups,
/// refusals) or the same error.
fn assert_sim_plans_as_nvidia(release: &str, args: &[&str]) {
    let r = manifest_release(release);
    let real = plan_in_child(&r.libcupti, &[], args);
    let sim_lib = gpuprof_tests::sim_lib_dir();
    let env: [(&str, &OsStr); 3] = [
        ("LD_LIBRARY_PATH", sim_lib.as_os_str()),
        ("SIMCUPTI_VERSION", OsStr::new(release)),
        ("SIMCUPTI_HOST_LIBRARY", r.libcupti.as_os_str()),
    ];
    let sim_cupti = gpuprof_tests::sim_cupti(gpuprof_tests::cupti_major(release));
    let simulated = plan_in_child(&sim_cupti, &env, args);
    assert_eq!(
        simulated,
        real,
        "CUPTI {release}, {}: the sim (left), NVIDIA's library (right)",
        args.join(" ")
    );
}

/// The simulated CUPTI's Profiler Host API answers as NVIDIA's library does, through
/// the production planner, on every offline release and every chip with a default
/// set: the default groups (one pass each), kernel replay's union (5 or 6 passes) and
/// the PM sampling set (12.6 and 12.8 refuse DRAM bytes); 12.6 does not know GB100.
#[test]
fn the_sims_host_api_plans_every_default_set_as_nvidias() {
    for release in OFFLINE {
        for chip in CHIPS {
            for set in [&[][..], &["--replay", "kernel"], &["--sampling"]] {
                let mut args = vec!["--chip", chip];
                args.extend_from_slice(set);
                assert_sim_plans_as_nvidia(release, &args);
            }
        }
    }
}

/// The same for what only some chips or profiler types accept, on the oldest and
/// newest 12.x and 13.x releases that run offline: the `dcgm` preset for both
/// profilers, derived metrics, a set that needs 8 passes, Hopper's and Blackwell's
/// tensor metrics on every chip, DRAM bytes written for PM sampling.
#[test]
fn the_sims_host_api_accepts_and_refuses_as_nvidias() {
    let sets: &[&[&str]] = &[
        &["--metrics", "dcgm"],
        &["--metrics", "dcgm", "--sampling"],
        &[
            "--metrics",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct",
        ],
        &[
            "--metrics",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
        &["--metrics", "sm__ops_path_tensor_op_hgmma_src_fp16.sum"],
        &[
            "--metrics",
            "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_off.sum",
        ],
        &["--sampling", "--metrics", "dram__bytes_write.sum"],
    ];
    for release in ["12.6", "12.8", "13.1"] {
        for chip in CHIPS {
            for set in sets {
                let mut args = vec!["--chip", chip];
                args.extend_from_slice(set);
                assert_sim_plans_as_nvidia(release, &args);
            }
        }
    }
}

/// NVIDIA's range profiler from 12.8 on takes no PCIe or NVLink metric in one config
/// beside an SM or DRAM metric (`CUPTI_ERROR_NOT_SUPPORTED`, each alone accepted;
/// 12.6 took them), where PM sampling takes them: so the `dcgm` preset plans without
/// them for per-kernel counters (5 metrics, one pass) and with them for sampling.
#[test]
fn the_range_profiler_keeps_pcie_and_nvlink_apart() {
    for release in ["12.6", "12.8", "13.1"] {
        if release == "12.6" {
            let both = "pcie__read_bytes.sum,dram__cycles_active.avg.pct_of_peak_sustained_elapsed";
            let p = plan(release, &["--chip", "GH100", "--metrics", both])
                .unwrap_or_else(|e| panic!("{release}: {e}"));
            assert_eq!(passes(&p), vec![1]);
            continue;
        }
        for chip in ["GA100", "GH100"] {
            for (system, other) in [
                (
                    "pcie__read_bytes.sum",
                    "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
                ),
                ("nvlrx__bytes.sum", "sm__cycles_active.avg"),
            ] {
                let both = format!("{system},{other}");
                let e = plan(release, &["--chip", chip, "--metrics", &both]).unwrap_err();
                assert_eq!(
                    e,
                    format!(
                        "gpuprof: error: cuptiProfilerHostConfigAddMetrics is not supported by \
                         this CUPTI (CUPTI_ERROR_NOT_SUPPORTED (27)) (chip {chip})"
                    ),
                    "{release} {chip}"
                );
                let sampled = plan(release, &["--chip", chip, "--sampling", "--metrics", &both])
                    .unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
                assert_eq!(passes(&sampled), vec![1], "{release} {chip}");
            }
            let kernel = plan(release, &["--chip", chip, "--metrics", "dcgm"])
                .unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
            assert_eq!(passes(&kernel), vec![1], "{release} {chip}");
            assert_eq!(metrics(&kernel, 0).len(), 5, "{release} {chip}");
            let sampled = plan(
                release,
                &["--chip", chip, "--sampling", "--metrics", "dcgm"],
            )
            .unwrap_or_else(|e| panic!("{release} {chip}: {e}"));
            assert_eq!(metrics(&sampled, 0).len(), 9, "{release} {chip}");
        }
    }
}

/// The size gpuprof passes for Host Initialize is what every offline release takes.
#[test]
fn gpuprof_passes_the_48_byte_host_initialize() {
    use cupti::params::Params;
    assert_eq!(
        <cupti_sys::CUpti_Profiler_Host_Initialize_Params as Params>::SIZE,
        48
    );
}
