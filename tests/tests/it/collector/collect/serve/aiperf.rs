//! `gpuprof record --serve` read by AIPerf's own collectors (PyPI `aiperf` 0.13.0 in
//! `target/venv-aiperf`, from `scripts/python-requirements-aiperf.txt`), through
//! `tests/aiperf/read_metrics.py`, while `record` lingers on its final values:
//!
//! - the server-metrics collector parses every `gpuprof_*` series, and the values
//!   equal `gpuprof report --format json` of the same session (the same checks as
//!   through Prometheus, `gpuprof_tests::check_against_report`);
//! - the DCGM telemetry collector gives a record for every GPU, with GPU
//!   utilization, power, energy, memory used and SM active through its default
//!   mapping and tensor, DRAM, graphics engine active and occupancy through the custom
//!   metrics CSV `docs/aiperf-gpu-metrics.csv`, each equal to the series the
//!   server-metrics collector read, in AIPerf's units.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gpuprof_tests::{
    check_against_report, free_port, record_serving, report_json, venv_python_of, wait_for_final,
    Sample, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(240);

/// AIPerf's DCGM collector's units (`SCALING_FACTORS` of
/// `aiperf/gpu_telemetry/dcgm_collector.py`): field, DCGM series, factor.
const DEFAULT_FIELDS: &[(&str, &str, f64)] = &[
    ("nvidia_power_usage", "DCGM_FI_DEV_POWER_USAGE", 1.0),
    (
        "nvidia_energy_consumption",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        1e-9,
    ),
    ("nvidia_gpu_utilization", "DCGM_FI_DEV_GPU_UTIL", 1.0),
    (
        "nvidia_memory_utilization",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        1.0,
    ),
    ("nvidia_memory_used", "DCGM_FI_DEV_FB_USED", 1.048576e-3),
    ("nvidia_temperature", "DCGM_FI_DEV_GPU_TEMP", 1.0),
    ("nvidia_sm_utilization", "DCGM_FI_PROF_SM_ACTIVE", 100.0),
];

/// The fields `docs/aiperf-gpu-metrics.csv` adds (AIPerf names a custom field
/// `nvidia_` + the DCGM name's suffix, lower case, and does not scale it).
const CUSTOM_FIELDS: &[(&str, &str)] = &[
    ("nvidia_gr_engine_active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    ("nvidia_sm_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY"),
    (
        "nvidia_pipe_tensor_active",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    ),
    ("nvidia_dram_active", "DCGM_FI_PROF_DRAM_ACTIVE"),
];

/// A float the script wrote as Python's `repr` (every bit: JSON numbers would go
/// through serde_json's float parsing, which may round differently).
fn exact(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a float's repr: {v}"))
}

#[test]
fn aiperf_collectors_read_the_dcgm_and_gpuprof_series_with_the_report_s_values() {
    let python = venv_python_of("aiperf");
    let scratch = Scratch::new("serve-aiperf");
    let out = scratch.join("out");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let top = 4;
    let record = TimedChild::spawn(
        record_serving(&out, port, top, 200, &[("GPUPROF_METRICS", "dcgm")]),
        LIMIT,
    );
    wait_for_final(&addr, Duration::from_secs(180));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("aiperf/read_metrics.py");
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/aiperf-gpu-metrics.csv");
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .arg(format!("http://{addr}/metrics"))
        .arg(csv);
    let read = TimedChild::spawn(cmd, LIMIT).wait();
    // SIGTERM ends the linger; record then exits with the program's status.
    // SAFETY: kill has no memory-safety preconditions; the child is not reaped yet.
    unsafe { libc::kill(record.id() as libc::pid_t, libc::SIGTERM) };
    let recorded = record.wait();
    assert_eq!(read.status.code(), Some(0), "read_metrics.py: {read:?}");
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "gpuprof record: {recorded:?}"
    );
    let got: Value = serde_json::from_str(&read.stdout).expect("read_metrics.py JSON");

    // The server-metrics collector: AIPerf names a counter's family without `_total`.
    let samples: Vec<Sample> = got["server"]
        .as_array()
        .expect("server samples")
        .iter()
        .map(|s| {
            let family = s[0].as_str().expect("family");
            let name = if s[1] == "counter" && !family.ends_with("_total") {
                format!("{family}_total")
            } else {
                family.to_string()
            };
            let labels: BTreeMap<String, String> = s[2]
                .as_object()
                .expect("labels")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label").to_string()))
                .collect();
            (name, labels, exact(&s[3]))
        })
        .collect();
    check_against_report(&samples, &report_json(&out), top);

    // The DCGM collector: one record per GPU, each field the series' value in
    // AIPerf's unit.
    let records = got["dcgm"].as_array().expect("DCGM records");
    let power: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.0 == "DCGM_FI_DEV_POWER_USAGE")
        .collect();
    assert!(!power.is_empty(), "no GPU series");
    assert_eq!(records.len(), power.len(), "a record per GPU: {records:?}");
    for r in records {
        let uuid = r["gpu_uuid"].as_str().expect("gpu_uuid");
        let labels = &power
            .iter()
            .find(|s| s.1["UUID"] == uuid)
            .unwrap_or_else(|| panic!("no series of {uuid}"))
            .1;
        assert_eq!(
            r["gpu_index"].as_u64().map(|i| i.to_string()),
            Some(labels["gpu"].clone())
        );
        assert_eq!(r["gpu_model_name"], labels["modelName"].as_str());
        assert_eq!(r["pci_bus_id"], labels["pci_bus_id"].as_str());
        assert_eq!(r["device"], labels["device"].as_str());
        assert_eq!(r["hostname"], labels["Hostname"].as_str());
        let value = |series: &str| {
            samples
                .iter()
                .find(|s| s.0 == series && s.1["UUID"] == uuid)
                .unwrap_or_else(|| panic!("no {series} of {uuid}"))
                .2
        };
        let data = &r["telemetry_data"];
        for (field, series, factor) in DEFAULT_FIELDS {
            assert_eq!(
                exact(&data[field]),
                value(series) * factor,
                "{field} from {series}: {r}"
            );
        }
        for (field, series) in CUSTOM_FIELDS {
            assert_eq!(exact(&data[field]), value(series), "{field}: {r}");
        }
    }
}
