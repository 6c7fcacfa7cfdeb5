//! `gpuprof record --serve` scraped by a real Prometheus server (Debian's
//! `prometheus`, installed by `scripts/debian-tools.sh prometheus` in
//! scripts/test.sh) while the cudarc workload runs on the simulated H100 with
//! `GPUPROF_METRICS=dcgm`: Prometheus's HTTP API (`/api/v1/query`) returns the
//! DCGM and `gpuprof_*` series, some scraped before the program ended, and the final
//! values equal `gpuprof report --format json` of the same session.
//!
//! Also: a bad address or a port in use is an error naming it, exit status 2, and
//! the program never starts.

use std::net::TcpListener;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gpuprof_tests::{
    check_against_report, free_port, prometheus_binary, record_on_sim, record_serving_with,
    report_json, Prometheus, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(240);

/// Half a second before now (call it once `record` has exited), once Prometheus shows
/// the program ended there: what it had while `record` still served the final values
/// (--serve-linger). Once the target is gone its series are marked stale, and a
/// query at a later time finds none of them.
fn final_scrape_time(prometheus: &Prometheus) -> f64 {
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs_f64()
        - 0.5;
    let start = Instant::now();
    while prometheus
        .query_at("gpuprof_program_ended == 1", at)
        .is_empty()
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Prometheus never scraped the final values"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    at
}

/// Records the cudarc workload with `env` while Prometheus scrapes it, and checks
/// what Prometheus stored against the report; returns the report (`None`: skipped).
fn scraped_by_prometheus(name: &str, env: &[(&str, &str)], top: usize) -> Option<Value> {
    scraped_with_args(name, env, top, &["--decode-steps", "100"])
}

/// [`scraped_by_prometheus`] with the workload's arguments `args`.
fn scraped_with_args(name: &str, env: &[(&str, &str)], top: usize, args: &[&str]) -> Option<Value> {
    let Some(binary) = prometheus_binary() else {
        gpuprof_tests::skip(
            "serve_prometheus",
            "prometheus is not installed (scripts/debian-tools.sh prometheus)",
        );
        return None;
    };
    let scratch = Scratch::new(name);
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let prometheus = Prometheus::start(&binary, &scratch, &target);

    let out = scratch.join("out");
    let o = TimedChild::spawn(record_serving_with(&out, port, top, 3, env, args), LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record --serve: {o:?}");
    assert!(
        o.stderr
            .contains(&format!("live metrics at http://{target}/metrics")),
        "{}",
        o.stderr
    );

    let at = final_scrape_time(&prometheus);
    // Scraped while the program ran too.
    let running = prometheus.query_at("min_over_time(gpuprof_program_ended[10m])", at);
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(
        running[0].2,
        0.0,
        "no scrape before the program ended: {:?}",
        prometheus.query_at("gpuprof_program_ended[10m]", at)
    );

    let samples = prometheus.query_at(r#"{__name__=~"gpuprof_.+|DCGM_FI_.+"}"#, at);
    let report = report_json(&out);
    check_against_report(&samples, &report, top);
    Some(report)
}

/// `GPUPROF_METRICS=dcgm`: every DCGM profiling field.
#[test]
fn prometheus_scrapes_the_live_series_and_the_final_values_equal_the_report() {
    scraped_by_prometheus("serve-prometheus-dcgm", &[("GPUPROF_METRICS", "dcgm")], 3);
}

/// PM sampling of the dcgm preset: the DCGM profiling fields come from the sampling
/// windows (GPU-wide), every one shown for the GPU.
#[test]
fn under_pm_sampling_the_dcgm_fields_are_shown() {
    let env = [
        ("GPUPROF_METRICS", "dcgm"),
        ("GPUPROF_COUNTERS", "sampling"),
    ];
    let Some(report) = scraped_by_prometheus("serve-prometheus-sampling", &env, 3) else {
        return;
    };
    let samples = report["counters"]["samples"].as_array().expect("samples");
    assert!(!samples.is_empty(), "no sampling windows: {report}");
}

/// The default counters: hardware FLOPs and DRAM bytes per kernel, family, range and
/// run equal the report's, and the DCGM fields the default metrics carry are shown
/// (SM active, SM occupancy, tensor pipe active, DRAM active, graphics engine
/// active), the PCIe and NVLink byte fields not.
#[test]
fn with_the_default_counters_hardware_flops_and_dram_bytes_are_the_report_s() {
    let Some(report) = scraped_by_prometheus("serve-prometheus-default", &[], 20) else {
        return;
    };
    let run = &report["roofline"]["run"];
    assert!(run["hw_flops"].as_f64().unwrap() > 0.0, "{run}");
    assert!(run["bytes"].as_f64().unwrap() > 0.0, "{run}");
    let fields: Vec<&str> = report["gpu_activity"][0]["fields"]
        .as_array()
        .expect("gpu_activity fields")
        .iter()
        .map(|f| f["field"].as_str().expect("field"))
        .collect();
    assert_eq!(fields, DEFAULT_DCGM_FIELDS, "{report}");
}

/// Decode as a CUDA graph with the default counters: the GPU is handed over to PM
/// sampling at the first graph launch, and the final values, the DRAM bytes fitted to
/// its windows included, equal the report's.
#[test]
fn after_a_hand_over_to_sampling_the_final_values_are_the_report_s() {
    let args = ["--graph-decode", "--decode-steps", "60"];
    let Some(report) = scraped_with_args("serve-prometheus-graph", &[], 20, &args) else {
        return;
    };
    let rows = report["roofline"]["kernels"].as_array().expect("kernels");
    assert!(
        rows.iter().any(|r| r["bytes_source"] == "sampled"),
        "no kernel with fitted bytes: {rows:#?}"
    );
}

/// The DCGM fields the default metrics give, in `DCGM_FIELDS`' order.
const DEFAULT_DCGM_FIELDS: [&str; 5] = [
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
];

/// Decode steps and the idle time after each: about 15 s of a server that is
/// mostly waiting, with one GPU-busy prefill at the start.
const IDLE_RUN: [&str; 4] = ["--decode-steps", "150", "--step-gap-ms", "100"];

/// DCGM's definition, end to end: with the default counters, a real Prometheus
/// scraping a run with idle gaps stores each DCGM ratio field while the program runs,
/// and its average over the run (`avg_over_time`) equals the report's value of the
/// GPU (its kernels' time times their class's value, over the wall clock from the
/// first kernel to the last) within 2%.
///
/// The series lag the GPU by 5 s (`live::dcgm::LAG_NS` in the collector); after the
/// program ends its last windows are shown one per second during `--serve-linger`
/// (5 s here; the last second holds the rest), so each window is shown about as
/// long as it is.
#[test]
fn dcgm_fields_averaged_over_a_run_with_idle_gaps_equal_the_report() {
    let Some(binary) = prometheus_binary() else {
        gpuprof_tests::skip(
            "serve_prometheus",
            "prometheus is not installed (scripts/debian-tools.sh prometheus)",
        );
        return;
    };
    let scratch = Scratch::new("serve-prometheus-idle");
    let port = free_port();
    // Every 50 ms: a window shown for a second is sampled 20 times, give or take one,
    // so the sample average weighs the windows by their length within a few percent.
    let target = format!("127.0.0.1:{port}");
    let prometheus = Prometheus::start_every(&binary, &scratch, &target, 50);
    let out = scratch.join("out");
    let cmd = record_serving_with(&out, port, 3, 5, &[], &IDLE_RUN);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record --serve: {o:?}");
    let at = final_scrape_time(&prometheus);
    let report = report_json(&out);
    let gpu = &report["gpu_activity"][0];
    let span_s = gpu["span_ns"].as_f64().expect("span_ns") / 1e9;
    assert!(span_s > 14.0, "the run spans {span_s} s: {gpu}");
    for field in DEFAULT_DCGM_FIELDS {
        let want = gpu["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .find(|f| f["field"] == field)
            .unwrap_or_else(|| panic!("{field} not in the report: {gpu}"));
        // Classes launched once or twice (prefill) are not measured with every
        // group: both sides leave their time out alike.
        assert!(
            want["valued_pct"].as_f64().expect("valued_pct") > 50.0,
            "{want}"
        );
        let want = want["value"].as_f64().expect("value");
        // Shown while the program ran.
        let running = prometheus.query_at(
            &format!("count_over_time(({field} and on() (gpuprof_program_ended == 0))[10m:200ms])"),
            at,
        );
        assert!(
            running.first().is_some_and(|s| s.2 > 0.0),
            "{field} not shown during the run: {running:?}"
        );
        let avg = prometheus.query_at(&format!("avg_over_time({field}[10m])"), at);
        assert_eq!(avg.len(), 1, "{field}: {avg:?}");
        let got = avg[0].2;
        if want == 0.0 {
            assert_eq!(got, 0.0, "{field}");
            continue;
        }
        let off = got / want - 1.0;
        println!(
            "{field}: Prometheus average {got:.6}, report {want:.6} ({:+.2}%)",
            100.0 * off
        );
        assert!(
            off.abs() <= 0.02,
            "{field}: Prometheus average {got} vs the report's {want} ({:+.2}%)",
            100.0 * off
        );
    }
}

/// `gpuprof record --serve ADDR -- sh -c 'touch MARK'`: must fail before running.
fn refused(addr: &str) -> String {
    let scratch = Scratch::new("serve-refused");
    let mark = scratch.join("ran");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.args(["--serve", addr, "-o"])
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!("touch {}", mark.display()));
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(!mark.exists(), "the program ran");
    assert!(!out.exists(), "the output directory was made");
    o.stderr
}

#[test]
fn a_bad_address_is_an_error_naming_it_and_nothing_runs() {
    let stderr = refused("not-an-address");
    assert!(
        stderr.contains("--serve not-an-address: not an address to listen on"),
        "{stderr}"
    );
}

#[test]
fn a_port_in_use_is_an_error_naming_it_and_nothing_runs() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("address").to_string();
    let stderr = refused(&addr);
    assert!(
        stderr.contains(&format!(
            "--serve {addr}: cannot listen there: Address already in use"
        )),
        "{stderr}"
    );
}
