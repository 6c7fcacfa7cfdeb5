//! A real Prometheus server (Debian's `prometheus`, installed by
//! `scripts/debian-tools.sh prometheus` in scripts/test.sh) for the tests of
//! `gpuprof record --serve`: started on a free port with its storage in a scratch
//! directory, scraping one target every 200 ms (or as asked), queried through its
//! HTTP API, killed when dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{free_port, http_get, url_encode, Sample, Scratch, TimedChild};

const LIMIT: Duration = Duration::from_secs(240);

/// The Prometheus server binary, or `None` (then the test skips: [`crate::skip`], a
/// failure under CI, where scripts/test.sh installs it).
pub fn prometheus_binary() -> Option<PathBuf> {
    ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// A Prometheus server scraping `target` every 200 ms, with its storage in `scratch`.
pub struct Prometheus {
    child: Option<TimedChild>,
    addr: String,
}

impl Prometheus {
    pub fn start(binary: &PathBuf, scratch: &Scratch, target: &str) -> Prometheus {
        Prometheus::start_every(binary, scratch, target, 200)
    }

    /// [`Prometheus::start`] scraping every `interval_ms` ms.
    pub fn start_every(
        binary: &PathBuf,
        scratch: &Scratch,
        target: &str,
        interval_ms: u64,
    ) -> Prometheus {
        let config = scratch.join("prometheus.yml");
        let timeout_ms = interval_ms * 3 / 4;
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {interval_ms}ms\n  scrape_timeout: {timeout_ms}ms\n\
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
        // Prometheus applies its targets a few seconds after start: wait until it has
        // tried the target once (it is down until gpuprof listens), so that scrapes
        // cover the whole run.
        while !matches!(
            http_get(&addr, "/api/v1/targets"),
            Ok((200, body)) if body.contains("\"lastScrape\":\"2")
        ) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "Prometheus at {addr} never tried its target"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Prometheus {
            child: Some(child),
            addr,
        }
    }

    /// The instant vector of `expr` now, as (labels without `__name__`, value) with
    /// the series name apart.
    pub fn query(&self, expr: &str) -> Vec<Sample> {
        self.query_path(&format!("/api/v1/query?query={}", url_encode(expr)))
    }

    /// The instant vector of `expr` at `unix_s` (seconds since the epoch): what
    /// Prometheus had scraped by then, before a target that went away was marked
    /// stale.
    pub fn query_at(&self, expr: &str, unix_s: f64) -> Vec<Sample> {
        self.query_path(&format!(
            "/api/v1/query?query={}&time={unix_s:.3}",
            url_encode(expr)
        ))
    }

    fn query_path(&self, path: &str) -> Vec<Sample> {
        let (status, body) = http_get(&self.addr, path).expect("query Prometheus");
        assert_eq!(status, 200, "{path}: {body}");
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
