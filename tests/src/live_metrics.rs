//! `gpuprof record --serve` in tests: recording the cudarc workload on the simulated
//! H100 while serving, and checking the series a client read (through Prometheus,
//! or AIPerf's parsers) against `gpuprof report --format json` of the same session.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gpuprof_collector::analysis::live::short_name::short_name;
use serde_json::Value;

use crate::{artifact, http_get, record_on_sim};

/// One sample: series name, labels, value.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// `gpuprof record --serve 127.0.0.1:PORT --serve-top TOP --serve-linger LINGER -o
/// OUT -- cudarc-llm --decode-steps 100` on the simulated H100 (CUPTI 13.4), with
/// `env` set for the program (e.g. `GPUPROF_METRICS=dcgm`): a run of a few seconds,
/// 2000 launches.
pub fn record_serving(
    out: &Path,
    port: u16,
    top: usize,
    linger_s: u64,
    env: &[(&str, &str)],
) -> Command {
    record_serving_with(out, port, top, linger_s, env, &["--decode-steps", "100"])
}

/// [`record_serving`] with the cudarc workload's arguments `args`.
pub fn record_serving_with(
    out: &Path,
    port: u16,
    top: usize,
    linger_s: u64,
    env: &[(&str, &str)],
    args: &[&str],
) -> Command {
    let mut cmd = record_on_sim("13.4");
    cmd.envs(env.iter().copied());
    cmd.arg("--serve")
        .arg(format!("127.0.0.1:{port}"))
        .args(["--serve-top", &top.to_string()])
        .args(["--serve-linger", &linger_s.to_string()])
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(args);
    cmd
}

/// Waits (at most `limit`) until `http://ADDR/metrics` shows `gpuprof_program_ended
/// 1`: the final values.
pub fn wait_for_final(addr: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        if let Ok((200, body)) = http_get(addr, "/metrics") {
            if body.lines().any(|l| l == "gpuprof_program_ended 1.0") {
                return;
            }
        }
        assert!(
            start.elapsed() < limit,
            "http://{addr}/metrics did not show the final values within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sums of a report row as the live series sum them.
#[derive(Debug, Default, Clone, PartialEq)]
struct Sums {
    launches: u64,
    gpu_ns: u64,
    model_flops: Option<f64>,
    hw_flops: Option<f64>,
    bytes: Option<f64>,
}

impl Sums {
    fn of(row: &Value, bytes_key: &str) -> Sums {
        Sums {
            launches: row
                .get("calls")
                .or_else(|| row.get("launches"))
                .and_then(Value::as_u64)
                .expect("launches"),
            gpu_ns: row["gpu_ns"].as_u64().expect("gpu_ns"),
            model_flops: row["model_flops"].as_f64(),
            hw_flops: row["hw_flops"].as_f64(),
            bytes: row[bytes_key].as_f64(),
        }
    }

    fn add(&mut self, o: &Sums) {
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        self.launches += o.launches;
        self.gpu_ns += o.gpu_ns;
        self.model_flops = sum(self.model_flops, o.model_flops);
        self.hw_flops = sum(self.hw_flops, o.hw_flops);
        self.bytes = sum(self.bytes, o.bytes);
    }
}

/// Floats summed in another order may differ in the last bits.
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// The samples of `name` whose labels include `want`.
fn find<'a>(samples: &'a [Sample], name: &str, want: &[(&str, &str)]) -> Vec<&'a Sample> {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

/// The one value of `name` with labels `want`.
fn one(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> f64 {
    let found = find(samples, name, want);
    assert_eq!(found.len(), 1, "{name} {want:?}: {found:?}");
    found[0].2
}

/// The sum of the values of `name` with labels `want` (a label value spread over
/// several series, as `other` over families).
fn sum(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> f64 {
    find(samples, name, want).iter().map(|s| s.2).sum()
}

/// `prefix`'s five series for label `label` = `value` equal `expected`.
fn check_sums(samples: &[Sample], prefix: &str, want: &[(&str, &str)], expected: &Sums) {
    let what = format!("{prefix} {want:?}");
    let launches = one(samples, &format!("{prefix}_launches_total"), want);
    assert_eq!(launches, expected.launches as f64, "{what}: launches");
    let seconds = one(samples, &format!("{prefix}_seconds_total"), want);
    assert_eq!(seconds, expected.gpu_ns as f64 / 1e9, "{what}: seconds");
    for (series, value) in [
        ("model_flops", expected.model_flops),
        ("hardware_flops", expected.hw_flops),
        ("dram_bytes", expected.bytes),
    ] {
        let name = format!("{prefix}_{series}_total");
        match value {
            Some(v) => {
                let got = one(samples, &name, want);
                assert!(close(got, v), "{what}: {series} {got} != report {v}");
            }
            None => assert!(find(samples, &name, want).is_empty(), "{what}: {series}"),
        }
    }
}

/// The final series read by a client (`samples`) equal `gpuprof report --format json`
/// of the same session: per kernel short name (the first `top` by GPU time have
/// their own label, the rest sum to `other`), family, NVTX range, the run and the
/// GPUs; MFU as the report rounds it; drops; one series per GPU of every DCGM
/// profiling field whose metric the session collects (and none of the others), and NVML's `DCGM_FI_DEV_*` within the report's device telemetry
/// (its last reading of each GPU), with dcgm-exporter's labels.
pub fn check_against_report(samples: &[Sample], report: &Value, top: usize) {
    let roofline = &report["roofline"];

    // Kernels by short name.
    let mut by_short: BTreeMap<String, Sums> = BTreeMap::new();
    let mut total = Sums::default();
    for row in roofline["kernels"].as_array().expect("roofline kernels") {
        let s = Sums::of(row, "bytes");
        by_short
            .entry(short_name(row["mangled"].as_str().expect("mangled")))
            .or_default()
            .add(&s);
        total.add(&s);
    }
    let labels: BTreeSet<&str> = find(samples, "gpuprof_kernel_launches_total", &[])
        .iter()
        .map(|(_, l, _)| l["kernel"].as_str())
        .collect();
    let named: Vec<&str> = labels.iter().copied().filter(|k| *k != "other").collect();
    assert_eq!(
        named.len(),
        top.min(by_short.len()),
        "kernel labels {labels:?} of {:?}",
        by_short.keys()
    );
    let mut rest = total.clone();
    for k in &named {
        let expected = by_short
            .get(*k)
            .unwrap_or_else(|| panic!("kernel {k} not in the report"));
        check_sums(samples, "gpuprof_kernel", &[("kernel", k)], expected);
        rest.launches -= expected.launches;
        rest.gpu_ns -= expected.gpu_ns;
        let minus = |a: Option<f64>, b: Option<f64>| a.map(|a| a - b.unwrap_or(0.0));
        rest.model_flops = minus(rest.model_flops, expected.model_flops);
        rest.hw_flops = minus(rest.hw_flops, expected.hw_flops);
        rest.bytes = minus(rest.bytes, expected.bytes);
    }
    if by_short.len() > top {
        let launches = sum(
            samples,
            "gpuprof_kernel_launches_total",
            &[("kernel", "other")],
        );
        assert_eq!(launches, rest.launches as f64, "other: launches");
        let seconds = sum(
            samples,
            "gpuprof_kernel_seconds_total",
            &[("kernel", "other")],
        );
        assert!(
            close(seconds, rest.gpu_ns as f64 / 1e9),
            "other: seconds {seconds} != {}",
            rest.gpu_ns as f64 / 1e9
        );
    }

    for row in roofline["families"].as_array().expect("families") {
        let name = row["name"].as_str().expect("family name");
        check_sums(
            samples,
            "gpuprof_family",
            &[("family", name)],
            &Sums::of(row, "bytes"),
        );
    }
    let ranges = roofline["ranges"].as_array().expect("ranges");
    assert!(!ranges.is_empty(), "the workload has NVTX ranges");
    for row in ranges {
        let name = row["name"].as_str().expect("range name");
        check_sums(
            samples,
            "gpuprof_nvtx_range",
            &[("range", name)],
            &Sums::of(row, "bytes"),
        );
    }
    check_sums(
        samples,
        "gpuprof_run",
        &[],
        &Sums::of(&roofline["run"], "bytes"),
    );
    for (field, series) in [
        ("mfu_pct", "gpuprof_mfu_ratio"),
        ("hfu_pct", "gpuprof_hfu_ratio"),
    ] {
        if let Some(pct) = roofline["run"][field].as_f64() {
            let v = one(samples, series, &[("window", "run")]);
            assert!(
                (v * 100.0 - pct).abs() <= 0.005 + 1e-9,
                "run {series} {v} vs the report's {field} {pct} %"
            );
        }
    }
    for d in report["dropped"].as_array().expect("dropped") {
        let source = d["source"].as_str().expect("source");
        let n = one(
            samples,
            "gpuprof_records_dropped_total",
            &[("source", source)],
        );
        assert_eq!(
            n,
            d["records"].as_u64().expect("records") as f64,
            "{source}"
        );
    }

    // GPUs: the report's devices, each series with its UUID and dcgm-exporter's labels.
    let models: BTreeSet<String> = report["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .flat_map(|p| p["devices"].as_array().expect("devices").iter())
        .map(|d| d["name"].as_str().expect("device name").trim().to_string())
        .collect();
    let gpus = find(samples, "gpuprof_gpu_kernel_launches_total", &[]);
    assert!(!gpus.is_empty(), "no GPU series");
    let kernel_count = report["kernel_count"].as_u64().expect("kernel_count");
    let kernel_ns = report["kernel_ns"].as_u64().expect("kernel_ns");
    assert_eq!(
        sum(samples, "gpuprof_gpu_kernel_launches_total", &[]),
        kernel_count as f64,
        "launches over the GPUs"
    );
    let seconds = sum(samples, "gpuprof_gpu_kernel_seconds_total", &[]);
    assert!(
        close(seconds, kernel_ns as f64 / 1e9),
        "GPU seconds {seconds}"
    );
    // The DCGM profiling fields are shown exactly when their metric is collected.
    let planned: BTreeSet<&str> = report["counters"]["plans"]
        .as_array()
        .expect("counter plans")
        .iter()
        .flat_map(|p| p["groups"].as_array().expect("groups").iter())
        .flat_map(|g| g.as_array().expect("group").iter())
        .map(|m| m.as_str().expect("metric"))
        .collect();
    let telemetry = report["device_telemetry"]
        .as_array()
        .expect("device_telemetry");
    assert!(!telemetry.is_empty(), "the simulated GPU answers NVML");
    for (_, labels, launches) in &gpus {
        let uuid = labels["UUID"].as_str();
        assert!(is_uuid(uuid), "UUID label {uuid}");
        assert_eq!(labels["device"], format!("nvidia{}", labels["gpu"]));
        if *launches > 0.0 {
            assert!(models.contains(&labels["modelName"]), "{labels:?}");
        }
        let want: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for field in cupti::metrics::DCGM_FIELDS {
            if !planned.contains(field.metric) {
                assert!(
                    find(samples, field.name, &[]).is_empty(),
                    "{} without its metric",
                    field.name
                );
                continue;
            }
            if *launches == 0.0 {
                continue;
            }
            let v = one(samples, field.name, &want);
            assert!(v.is_finite() && v >= 0.0, "{} = {v}", field.name);
            if field.metric.ends_with(".pct_of_peak_sustained_elapsed") {
                assert!(v <= 1.0, "{} = {v} is a ratio", field.name);
            }
        }
    }
    // NVML's fields: the GPU's last reading, within what the report says of all of them.
    for d in telemetry {
        let uuid = d["uuid"].as_str().expect("uuid");
        let index = d["index"].as_u64().expect("index").to_string();
        let want = [
            ("UUID", uuid),
            ("gpu", index.as_str()),
            ("pci_bus_id", d["pci_bus_id"].as_str().expect("pci_bus_id")),
            ("modelName", d["name"].as_str().expect("name").trim()),
        ];
        let get = |name: &str| one(samples, name, &want);
        let num = |key: &str| d[key].as_f64().unwrap_or_else(|| panic!("{key}"));
        let power = get("DCGM_FI_DEV_POWER_USAGE");
        assert!(
            power > 0.0 && power <= num("power_max_w"),
            "power {power} W: {d}"
        );
        let clock = get("DCGM_FI_DEV_SM_CLOCK");
        assert!(
            (num("sm_clock_min_mhz")..=num("sm_clock_max_mhz")).contains(&clock),
            "SM clock {clock}: {d}"
        );
        let energy = get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
        assert!(energy >= num("energy_j") * 1e3, "energy {energy} mJ: {d}");
        let fb = get("DCGM_FI_DEV_FB_USED");
        assert!(fb <= num("fb_used_max_mib"), "FB used {fb} MiB: {d}");
        let util = get("DCGM_FI_DEV_GPU_UTIL");
        assert!((0.0..=100.0).contains(&util), "GPU util {util}");
        let reasons = get("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") as u64;
        let seen = d["throttle_mask"].as_u64().expect("throttle_mask");
        assert_eq!(
            reasons & !seen,
            0,
            "throttle reasons {reasons:#x} not in {seen:#x}"
        );
        for name in [
            "DCGM_FI_DEV_MEM_COPY_UTIL",
            "DCGM_FI_DEV_MEM_CLOCK",
            "DCGM_FI_DEV_GPU_TEMP",
        ] {
            assert!(get(name) >= 0.0, "{name}");
        }
    }
    // Every DCGM series of a GPU carries its UUID.
    for (name, labels, _) in samples {
        if name.starts_with("DCGM_FI_") {
            let uuid = labels.get("UUID").map(String::as_str).unwrap_or("");
            assert!(is_uuid(uuid), "{name} {labels:?}");
        }
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn is_uuid(s: &str) -> bool {
    let Some(hex) = s.strip_prefix("GPU-") else {
        return false;
    };
    let parts: Vec<&str> = hex.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}
