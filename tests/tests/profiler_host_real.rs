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

use std::path::PathBuf;
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
                         know {chip} (its host library knows "
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

/// The simulated CUPTI accepts for PM sampling exactly what NVIDIA's library of the
/// same release accepts, for every metric of the cost model, on every chip.
#[test]
fn sim_pm_sampling_acceptance_is_the_real_librarys() {
    let names = sim_core::CostModel::builtin().counter_names();
    assert!(names.len() > 20, "{names:?}");
    for release in OFFLINE {
        let r = manifest_release(release);
        let exe = facts_program(r);
        let (major, minor) = gpuprof_tests::major_minor(release);
        for chip in CHIPS {
            if !knows(release, chip) {
                continue;
            }
            let out = Command::new(&exe)
                .arg(&r.libcupti)
                .args(["pm", chip])
                .args(&names)
                .env("LD_LIBRARY_PATH", &r.lib_dir)
                .output()
                .expect("run profiler_host_facts");
            assert!(out.status.success(), "{release} {chip}: {out:?}");
            let real: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| {
                    l.strip_suffix(" 0")?
                        .strip_prefix("pm ")
                        .map(str::to_string)
                })
                .collect();
            let sim: Vec<String> = names
                .iter()
                .filter(|n| sim_core::pm_sampling_accepts(n, (major, minor), chip))
                .cloned()
                .collect();
            assert_eq!(sim, real, "CUPTI {release} on {chip}");
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
