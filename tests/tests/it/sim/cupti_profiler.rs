//! The simulated CUPTI's profiling APIs end to end: profiler host, range profiler and
//! PM sampling, driven by a C client (tests/c/profiler_client.c) compiled per release
//! against that release's own NVIDIA headers, on the simulated driver, with exact
//! counter values from a small cost model.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use gpuprof_tests::{
    artifact, compile_c, cupti_12x, cupti_soname, manifest_release, target_profile_dir,
};

/// The cost model the simulated driver prices the client's kernels with.
const COST_MODEL: &str = r#"
[defaults.counters]
"gpu__time_duration.sum" = "duration_ns"
"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" = "10 + blocks"
[[kernel]]
name = "k_*"
duration_ns = "1000 + 3 * blocks * threads / 128"
[kernel.counters]
"dram__bytes_read.sum" = "blocks * threads * 4"
"dram__bytes_write.sum" = "blocks * 16 + 1"
"sm__cycles_active.avg" = "duration_ns * 1.98"
"#;

const METRICS: [&str; 5] = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "sm__cycles_active.avg",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
];
const PCT: &str = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";

/// The model's counters (with duration) for the client's kernel `i` (k_a, k_b, k_c).
fn kernel(i: usize) -> BTreeMap<String, f64> {
    let model =
        sim_core::CostModel::from_toml_str(COST_MODEL, "sim/cupti_profiler.rs").expect("model");
    let (name, grid, block) = [
        ("k_a", [2, 1, 1], 128),
        ("k_b", [4, 1, 1], 96),
        ("k_c", [3, 2, 1], 32),
    ][i];
    let launch = sim_core::Launch {
        name: name.into(),
        grid,
        block: [block, 1, 1],
        ..Default::default()
    };
    let cost = model.cost(&launch).expect("cost");
    let mut c = cost.counters;
    c.insert("duration".into(), cost.duration_ns as f64);
    c
}

/// Runs the client for `release` (extra args, extra env); returns its stdout lines.
fn run(release: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let m = manifest_release(release);
    let host_h = m.cupti_include.join("cupti_profiler_host.h");
    let needs_cxx = std::fs::read_to_string(&host_h)
        .expect("cupti_profiler_host.h")
        .contains("#include <string>");
    let mut cc: Vec<String> = if needs_cxx {
        vec!["-x".into(), "c++".into(), "-fno-exceptions".into()]
    } else {
        vec!["-x".into(), "c".into()]
    };
    cc.extend(m.include_dirs.iter().map(|d| format!("-I{}", d.display())));
    cc.push("-Wall".into());
    let cc: Vec<&str> = cc.iter().map(String::as_str).collect();
    let client = compile_c(
        "profiler_client.c",
        &format!("sim-cupti-profiler/client-{release}"),
        &cc,
    );

    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let dir: PathBuf = target_profile_dir().join(format!(
        "sim-cupti-profiler/lib-{release}-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(artifact("libcuda.so"), dir.join("libcuda.so.1")).expect("copy libcuda");
    let cupti = dir.join(cupti_soname(release));
    std::fs::copy(artifact("libcupti.so"), &cupti).expect("copy libcupti");
    std::fs::write(dir.join("model.toml"), COST_MODEL).expect("write the cost model");
    let mut cmd = Command::new(&client);
    cmd.arg(&cupti).args(args).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.env("LD_LIBRARY_PATH", &dir)
        .env("SIMCUDA_COST_MODEL", dir.join("model.toml"))
        .env("SIMCUPTI_VERSION", release)
        .env(
            "SIMCUPTI_HOST_LIBRARY",
            gpuprof_tests::sim_host_library(release),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the client");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client for {release} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(str::to_owned).collect()
}

/// The value of `key=` in `line`.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!(" {key}=");
    let start = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    line[start..].split(' ').next().unwrap_or("")
}

fn num(line: &str, key: &str) -> f64 {
    field(line, key)
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {line}: {e}"))
}

/// The lines starting with `prefix ` (in order).
fn lines_of<'a>(lines: &'a [String], prefix: &str) -> Vec<&'a String> {
    lines
        .iter()
        .filter(|l| l.starts_with(&format!("{prefix} ")))
        .collect()
}

/// Checks one range line against expected metric values (exact).
fn expect_range(line: &str, name: &str, host_name: &str, want: &BTreeMap<String, f64>) {
    assert_eq!(field(line, "name"), name, "{line}");
    assert_eq!(field(line, "host_name"), host_name, "{line}");
    for m in METRICS {
        assert_eq!(num(line, m), want[m], "{m} in {line}");
    }
}

/// Kernels `ks` as one range: counters add, the tensor-activity ratio is the
/// duration-weighted average (the sim's documented rule).
fn combined(ks: &[usize]) -> BTreeMap<String, f64> {
    let all: Vec<BTreeMap<String, f64>> = ks.iter().map(|&i| kernel(i)).collect();
    let mut want = BTreeMap::new();
    for m in METRICS {
        want.insert(m.to_string(), all.iter().fold(0.0, |s, k| s + k[m]));
    }
    let weighted = all.iter().fold(0.0, |s, k| s + k[PCT] * k["duration"])
        / all.iter().fold(0.0, |s, k| s + k["duration"]);
    want.insert(PCT.into(), weighted);
    want
}

/// k_a and k_b as one range.
fn pair() -> BTreeMap<String, f64> {
    combined(&[0, 1])
}

fn check(release: &str) {
    let lines = run(release, &[], &[]);
    let text = lines.join("\n");
    assert!(lines.contains(&"chip 0 GH100".to_string()), "{text}");
    // One AddMetrics call is one pass group; three calls are three.
    assert!(lines.contains(&"passes 1".to_string()), "{text}");
    assert!(
        lines.contains(&"passes_three_calls 3".to_string()),
        "{text}"
    );
    assert!(
        lines.contains(&"pm_passes_two_calls 2".to_string()),
        "{text}"
    );
    assert_eq!(lines.last().map(String::as_str), Some("done"), "{text}");
    let errors: BTreeMap<&str, &str> = lines_of(&lines, "err")
        .iter()
        .map(|l| {
            let mut w = l.split(' ').skip(1);
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect();
    // CUPTI_ERROR_INVALID_CHIP_NAME (46) exists from 13.0; 12.x answers INVALID_PARAMETER.
    let unknown_chip = if cupti_12x(release) { "1" } else { "46" };
    let want: BTreeMap<&str, &str> = [
        ("enable_before_initialize", "15"),
        ("initialize_small_struct", "1"),
        ("host_unknown_chip", unknown_chip),
        // NVIDIA's library answers CUPTI_ERROR_INVALID_PARAMETER for a metric it
        // refuses, unknown or not allowed for the profiler type, and for a params
        // struct larger than its release's (cupti/profiler_host_real.rs).
        ("add_unknown_metric", "1"),
        // After a refusal NVIDIA's host object takes no more metrics.
        ("add_after_refusal", "999"),
        ("host_init_larger_struct", "1"),
        ("pm_add_tensor_ops", "1"),
        ("pm_add_unknown_metric", "1"),
        // No metrics, no config image (NVIDIA's library crashes here).
        ("config_size_no_metrics", "1"),
        // A structSize one field beyond the release's `*_STRUCT_SIZE`.
        ("start_larger_struct", "1"),
        ("pm_setconfig_larger_struct", "1"),
        // "CUPTI_ERROR_NOT_SUPPORTED for config image which require multiple passes"
        // (cupti_pmsampling.h).
        ("pm_setconfig_two_passes", "27"),
        ("enable_twice", "7"),
        ("start_before_setconfig", "7"),
        ("start_small_struct", "1"),
        ("counter_data_unknown_metric", "17"),
        ("user_range_kernel_replay", "1"),
        ("start_twice", "7"),
        ("decode_before_stop", "7"),
        ("push_in_auto_range", "7"),
        ("pop_before_start", "7"),
        ("pop_unbalanced", "7"),
        ("start_after_disable", "7"),
        ("pm_enable_twice", "7"),
        ("pm_start_before_setconfig", "7"),
        ("pm_start_twice", "7"),
        ("pm_stop_twice", "7"),
        // Auto range with user replay over a graph's kernel nodes: "not supported"
        // (CUPTI release notes); the sim refuses it at DecodeData (strict).
        ("graph_auto_user_replay", "27"),
    ]
    .into_iter()
    .collect();
    assert_eq!(errors, want, "{text}");

    // Auto range: one range per kernel, numbered in execution order, the model's values.
    assert!(
        lines.contains(&"auto all_passes=1 dropped=0".to_string()),
        "{text}"
    );
    assert!(lines.contains(&"auto ranges=3".to_string()), "{text}");
    let auto: Vec<&String> = lines_of(&lines, "auto")
        .into_iter()
        .filter(|l| l.contains(" range="))
        .collect();
    assert_eq!(auto.len(), 3, "{text}");
    for (i, l) in auto.iter().enumerate() {
        expect_range(l, &i.to_string(), &i.to_string(), &kernel(i));
    }
    // An image with room for 2 ranges: the third is dropped.
    assert!(
        lines.contains(&"full all_passes=1 dropped=1".to_string()),
        "{text}"
    );
    assert!(lines.contains(&"full ranges=2".to_string()), "{text}");

    // User range around k_a and k_b; k_c ran outside any range.
    assert!(lines.contains(&"user ranges=1".to_string()), "{text}");
    let user = lines_of(&lines, "user")
        .into_iter()
        .find(|l| l.contains(" range=0 "))
        .expect("user range");
    expect_range(user, "pair", "pair", &pair());

    // Nesting levels 1 and 2: outer = k_a + k_b, outer/inner = k_b.
    assert!(lines.contains(&"nested ranges=2".to_string()), "{text}");
    let nested: Vec<&String> = lines_of(&lines, "nested")
        .into_iter()
        .filter(|l| l.contains(" range="))
        .collect();
    expect_range(nested[0], "outer", "outer", &pair());
    expect_range(nested[1], "outer/inner", "outer::inner", &kernel(1));

    // A graph of k_a, k_b, k_c: auto range with kernel replay gives each kernel node
    // its range, in execution order; a user range holds the whole graph.
    assert!(
        lines.contains(&"graph_auto all_passes=1 dropped=0".to_string()),
        "{text}"
    );
    assert!(lines.contains(&"graph_auto ranges=3".to_string()), "{text}");
    let graph: Vec<&String> = lines_of(&lines, "graph_auto")
        .into_iter()
        .filter(|l| l.contains(" range="))
        .collect();
    assert_eq!(graph.len(), 3, "{text}");
    for (i, l) in graph.iter().enumerate() {
        expect_range(l, &i.to_string(), &i.to_string(), &kernel(i));
    }
    assert!(lines.contains(&"graph_user ranges=1".to_string()), "{text}");
    let whole = lines_of(&lines, "graph_user")
        .into_iter()
        .find(|l| l.contains(" range=0 "))
        .expect("graph_user range");
    expect_range(whole, "graph", "graph", &combined(&[0, 1, 2]));

    // PM sampling over 4 x (k_a, k_b, k_c): contiguous samples covering the run, and
    // each counter summed over the samples equals the kernels' total.
    let pm = lines_of(&lines, "pm").into_iter().next().expect("pm line");
    assert_eq!(field(pm, "gaps"), "0", "{pm}");
    assert_eq!(field(pm, "covers"), "1", "{pm}");
    assert_eq!(
        field(pm, "multiple_decodes"),
        "1",
        "16-sample images fill up: {pm}"
    );
    assert_eq!(field(pm, "interval_ok"), "1", "{pm}");
    let sums: BTreeMap<String, f64> = lines_of(&lines, "pm_sum")
        .iter()
        .map(|l| {
            let (k, v) = l["pm_sum ".len()..].split_once('=').expect("k=v");
            (k.to_string(), v.parse().expect("number"))
        })
        .collect();
    // (A sample's gpu__time_duration.sum is its window's length, not kernel work.)
    for m in ["dram__bytes_read.sum", "dram__bytes_write.sum"] {
        let total: f64 = (0..3).map(|i| 4.0 * kernel(i)[m]).sum();
        assert_eq!(sums[m], total, "{m}: {text}");
    }
    let cycles: f64 = (0..3)
        .map(|i| 4.0 * kernel(i)["sm__cycles_active.avg"])
        .sum();
    assert!(
        (sums["sm__cycles_active.avg"] - cycles).abs() <= cycles * 1e-12,
        "{} vs {cycles}",
        sums["sm__cycles_active.avg"]
    );
}

#[test]
fn release_12_9() {
    check("12.9");
}

#[test]
fn release_13_0() {
    check("13.0");
}

#[test]
fn release_13_4() {
    check("13.4");
}

/// `cuptiDeviceGetChipName` by the simulated device's compute capability.
#[test]
fn chip_names() {
    for (cc, chip) in [
        ("8.0", "GA100"),
        ("8.9", "AD102"),
        ("9.0", "GH100"),
        ("10.0", "GB100"),
    ] {
        let lines = run("13.4", &["chip"], &[("SIMCUDA_CC", cc)]);
        assert_eq!(lines, [format!("chip 0 {chip}")], "cc {cc}");
    }
}

/// `cuptiPmSamplingSetConfig`'s trigger by chip: the GPU-time trigger "is not
/// supported on Turing GPU architecture and GA100 GPU" (cupti_pmsampling.h), the
/// SYSCLK trigger works on every chip. On TU102 NVIDIA's library makes the client's
/// five metrics two passes, which PM sampling refuses whatever the trigger
/// (`CUPTI_ERROR_NOT_SUPPORTED`, 27).
#[test]
fn pm_sampling_trigger_by_chip() {
    for (cc, gpu_time, sysclk) in [
        ("7.5", "27", "27"), // TU102
        ("8.0", "27", "0"),  // GA100
        ("8.6", "0", "0"),   // GA102
        ("9.0", "0", "0"),   // GH100
    ] {
        let lines = run("13.4", &["trigger"], &[("SIMCUDA_CC", cc)]);
        assert_eq!(
            lines[1..],
            [
                format!("trigger gpu_time {gpu_time}"),
                format!("trigger sysclk {sysclk}")
            ],
            "cc {cc}: {lines:?}"
        );
    }
}
