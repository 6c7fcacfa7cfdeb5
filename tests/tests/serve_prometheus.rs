//! `gpuprof record --serve` scraped by a real Prometheus server (Debian's
//! `prometheus`, installed by `scripts/debian-tools.sh prometheus` in
//! scripts/test.sh) while the cudarc workload runs on the simulated H100 with
//! `GPUPROF_METRICS=dcgm`: Prometheus's HTTP API (`/api/v1/query`) returns the
//! DCGM and `gpuprof_*` series, some scraped before the program ended, and the final
//! values equal `gpuprof report --format json` of the same session.
//!
//! Also: a bad address or a port in use is an error naming it, exit status 2, and
//! the program never starts.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use gpuprof_tests::{
    check_against_report, free_port, http_get, record_on_sim, record_serving, report_json,
    url_encode, Sample, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(240);

/// The Prometheus server binary, or `None` (then the test says it is skipped; in CI,
/// where scripts/test.sh installs it, that is a failure).
fn prometheus_binary() -> Option<PathBuf> {
    let found = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() && std::env::var_os("CI").is_some() {
        panic!("prometheus is not installed: scripts/test.sh installs it with scripts/debian-tools.sh prometheus");
    }
    found
}

/// A Prometheus server scraping `target` every 200 ms, with its storage in `scratch`.
struct Prometheus {
    child: Option<TimedChild>,
    addr: String,
}

impl Prometheus {
    fn start(binary: &PathBuf, scratch: &Scratch, target: &str) -> Prometheus {
        let config = scratch.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
                 scrape_configs:\n  - job_name: gpuprof\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let addr = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(binary);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                scratch.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"));
        let child = TimedChild::spawn(cmd, LIMIT);
        let start = Instant::now();
        while !matches!(http_get(&addr, "/-/ready"), Ok((200, _))) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "Prometheus at {addr} not ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Prometheus {
            child: Some(child),
            addr,
        }
    }

    /// The instant vector of `expr`, as (labels without `__name__`, value) with the
    /// series name apart.
    fn query(&self, expr: &str) -> Vec<Sample> {
        let (status, body) = http_get(
            &self.addr,
            &format!("/api/v1/query?query={}", url_encode(expr)),
        )
        .expect("query Prometheus");
        assert_eq!(status, 200, "{expr}: {body}");
        let v: Value = serde_json::from_str(&body).expect("Prometheus JSON");
        assert_eq!(v["status"], "success", "{body}");
        v["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|r| {
                let mut labels: BTreeMap<String, String> = r["metric"]
                    .as_object()
                    .expect("labels")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect();
                let name = labels.remove("__name__").unwrap_or_default();
                labels.remove("job");
                labels.remove("instance");
                let value: f64 = r["value"][1]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .expect("a value");
                (name, labels, value)
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if let Some(c) = self.child.take() {
            c.kill();
        }
    }
}

/// Records the cudarc workload with `metrics` while Prometheus scrapes it, and
/// checks what Prometheus stored against the report; returns the report (`None`:
/// skipped).
fn scraped_by_prometheus(name: &str, metrics: Option<&str>, top: usize) -> Option<Value> {
    let Some(binary) = prometheus_binary() else {
        println!("skipped: prometheus is not installed (scripts/debian-tools.sh prometheus)");
        return None;
    };
    let scratch = Scratch::new(name);
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let prometheus = Prometheus::start(&binary, &scratch, &target);

    let out = scratch.join("out");
    let o = TimedChild::spawn(record_serving(&out, port, top, 3, metrics), LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record --serve: {o:?}");
    assert!(
        o.stderr
            .contains(&format!("live metrics at http://{target}/metrics")),
        "{}",
        o.stderr
    );

    // Prometheus has the final values once it shows the program ended.
    let start = Instant::now();
    while prometheus.query("gpuprof_program_ended == 1").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Prometheus never scraped the final values"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Scraped while the program ran too.
    let running = prometheus.query("min_over_time(gpuprof_program_ended[10m])");
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(
        running[0].2,
        0.0,
        "no scrape before the program ended: {:?}",
        prometheus.query("gpuprof_program_ended[10m]")
    );

    let samples = prometheus.query(r#"{__name__=~"gpuprof_.+|DCGM_FI_.+"}"#);
    let report = report_json(&out);
    check_against_report(&samples, &report, top);
    Some(report)
}

/// `GPUPROF_METRICS=dcgm`: every DCGM profiling field.
#[test]
fn prometheus_scrapes_the_live_series_and_the_final_values_equal_the_report() {
    scraped_by_prometheus("serve-prometheus-dcgm", Some("dcgm"), 3);
}

/// The default counters: hardware FLOPs and DRAM bytes per kernel, family, range and
/// run equal the report's, and no DCGM profiling field is shown (their metrics are
/// not collected).
#[test]
fn with_the_default_counters_hardware_flops_and_dram_bytes_are_the_report_s() {
    let Some(report) = scraped_by_prometheus("serve-prometheus-default", None, 20) else {
        return;
    };
    let run = &report["roofline"]["run"];
    assert!(run["hw_flops"].as_f64().unwrap() > 0.0, "{run}");
    assert!(run["bytes"].as_f64().unwrap() > 0.0, "{run}");
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
